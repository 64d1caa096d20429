package acp

import (
	"context"
	"fmt"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// replay sends a session's newest ReplayRows rows as session/update
// notifications before session/load answers: messages as chunks, calls
// and their results, notices, compactions where they happened, and calls
// the log left without a result closed as failed.
func (e *entry) replay(ctx context.Context) {
	hs := e.session()
	rows := hs.Engine().Rows()
	if len(rows) > ReplayRows {
		rows = rows[len(rows)-ReplayRows:]
	}
	for _, u := range e.replayUpdates(rows) {
		e.s.notify(ctx, e.id, u)
	}
}

// replayUpdates renders rows as the live run said them.
func (e *entry) replayUpdates(rows []session.Row) []SessionUpdate {
	hs := e.session()
	tools := hs.Tools()
	cwd := hs.Meta().Cwd
	var out []SessionUpdate
	open := map[string]*callState{} // by provider id, calls without a result
	var order []string
	for _, r := range rows {
		// A message replays under an id its row gives it.
		msgID := fmt.Sprintf("row_%d", r.Seq)
		switch en := r.Entry.(type) {
		case session.UserMessage:
			switch en.Source {
			case session.SourceReminder:
			case session.SourceTask:
				out = append(out, ContentChunk{Tag: TagAgentMessage, Content: TextBlock(taskDirection(en.Tasks) + "\n"), MessageID: msgID})
			default:
				for _, b := range userBlocks(en.Parts) {
					out = append(out, ContentChunk{Tag: TagUserMessage, Content: b, MessageID: msgID})
				}
			}
		case session.AssistantMessage:
			for _, p := range en.Parts {
				switch p := p.(type) {
				case model.Thinking:
					if p.Text != "" {
						out = append(out, ContentChunk{Tag: TagAgentThought, Content: TextBlock(p.Text), MessageID: msgID + "_thought"})
					}
				case model.Text:
					if p.Text != "" {
						out = append(out, ContentChunk{Tag: TagAgentMessage, Content: TextBlock(p.Text), MessageID: msgID})
					}
				case model.ToolCall:
					cs := &callState{name: p.Name, kind: tool.KindOther}
					title := p.Name
					var locs []tool.Location
					if t, ok := tools.Get(p.Name); ok {
						cs.kind = t.Spec().Kind
						title = tool.Title(t, p.Arguments)
						locs = tool.Locations(t, p.Arguments, cwd)
					}
					e.mu.Lock()
					cs.id = e.ids.assign(p.ID)
					e.mu.Unlock()
					if _, dup := open[p.ID]; !dup {
						order = append(order, p.ID)
					}
					open[p.ID] = cs
					// Terminal content is never replayed: the client has no
					// terminal for it any more.
					out = append(out, ToolCall{ToolCallID: cs.id, Title: title, Kind: kindOf(cs.kind), Status: "in_progress",
						Locations: locations(locs), RawInput: rawJSON(p.Arguments)})
				}
			}
		case session.ToolResult:
			cs := open[en.CallID]
			if cs == nil {
				continue
			}
			delete(open, en.CallID)
			u := ToolCallUpdate{ToolCallID: cs.id, Status: status(en.Status), RawOutput: rawOutput(en)}
			if en.Change != "" {
				// The log keeps the change, not the two texts.
				u.Content = []ToolCallContent{codeBlock("diff", en.Change)}
				if t := resultText(en); t != "" {
					u.Content = append(u.Content, ToolCallContent{Type: "content", Content: ptr(TextBlock(t))})
				}
			} else {
				u.Content = resultContent(&callState{kind: cs.kind}, en)
			}
			out = append(out, u)
		case session.Notice:
			out = append(out, e.notice(en))
		case session.HookRun:
			out = append(out, e.notice(en.Notice()))
		case session.Compaction:
			for _, u := range e.compaction(en.Summary, recordedFacts(en), false) {
				out = append(out, u)
			}
		}
	}
	for _, id := range order {
		if cs := open[id]; cs != nil {
			delete(open, id)
			out = append(out, ToolCallUpdate{ToolCallID: cs.id, Status: "failed",
				Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock("This call never finished: the session stopped before it returned a result."))}}})
		}
	}
	return out
}

// taskDirection is the stage direction a background report replays as.
func taskDirection(ids []string) string {
	if len(ids) == 0 {
		return "(A background task finished)"
	}
	if len(ids) == 1 {
		return fmt.Sprintf("(Background task %s finished)", ids[0])
	}
	return fmt.Sprintf("(Background tasks %s finished)", strings.Join(ids, ", "))
}
