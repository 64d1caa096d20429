package agent

import (
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// SummaryPreamble introduces a compaction summary to the model.
const SummaryPreamble = "This session was compacted. Summary of the conversation before the messages that follow:\n\n"

// BuildView returns the conversation as the model is sent it: after the
// latest compaction, its summary and then the rows from its kept-from
// sequence on; notices are for people and are left out.
func BuildView(rows []session.Row) []model.Message {
	var view []model.Message
	from := int64(0)
	if i := session.LatestCompaction(rows); i >= 0 {
		c := rows[i].Entry.(session.Compaction)
		view = append(view, model.Message{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: SummaryPreamble + c.Summary}}})
		from = c.KeptFrom
	}
	for _, r := range rows {
		if r.Seq < from {
			continue
		}
		view = appendView(view, r.Entry)
	}
	return view
}

func appendView(view []model.Message, e session.Entry) []model.Message {
	switch e := e.(type) {
	case session.UserMessage:
		return append(view, model.Message{Role: model.RoleUser, Parts: e.ModelParts()})
	case session.AssistantMessage:
		return append(view, model.Message{Role: model.RoleAssistant, Parts: e.Parts})
	case session.ToolResult:
		part := model.ToolResult{CallID: e.CallID, Name: e.Name, Content: e.Content, IsError: e.Status != session.StatusOK}
		if n := len(view); n > 0 && view[n-1].Role == model.RoleTool {
			last := view[n-1]
			parts := make(model.Parts, len(last.Parts), len(last.Parts)+1)
			copy(parts, last.Parts)
			view[n-1] = model.Message{Role: model.RoleTool, Parts: append(parts, part)}
			return view
		}
		return append(view, model.Message{Role: model.RoleTool, Parts: model.Parts{part}})
	}
	return view
}

// messageSize approximates a message's size in bytes, for estimating how
// many tokens the next request adds.
func messageSize(m model.Message) int {
	n := 0
	for _, p := range m.Parts {
		switch p := p.(type) {
		case model.Text:
			n += len(p.Text)
		case model.Thinking:
			n += len(p.Text)
		case model.ToolCall:
			n += len(p.Name) + len(p.Arguments)
		case model.ToolResult:
			for _, c := range p.Content {
				if t, ok := c.(model.Text); ok {
					n += len(t.Text)
				} else {
					n += 1000
				}
			}
		case model.Resource:
			n += len(p.Text) + len(p.URI)
		case model.Image:
			n += 1500 * 4 // images cost about 1,500 tokens
		}
	}
	return n
}
