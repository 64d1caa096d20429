package events

import (
	"encoding/json"
	"meka.dev/meka/agent"

	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// ResultCap bounds a tool result carried by tool.finished.
const ResultCap = 8 << 10

// FromRows maps rows appended to a session to the durable events they
// cause. It is pure, so a store calls it inside the transaction that
// stores the rows: a row and its events commit together.
func FromRows(sessionID string, rows []session.Row) []Entry {
	var out []Entry
	add := func(r session.Row, typ string, data any) {
		b, err := json.Marshal(data)
		if err != nil {
			return
		}
		out = append(out, Entry{SessionID: sessionID, Turn: r.Turn, Type: typ, Data: b})
	}
	for _, r := range rows {
		switch e := r.Entry.(type) {
		case session.UserMessage:
			add(r, MessageCreated, map[string]any{"row": r.Seq, "role": "user", "content": Content(e.Parts), "source": Source(e.Source)})
		case session.AssistantMessage:
			if text := (model.Message{Parts: e.Parts}).Text(); text != "" {
				add(r, MessageCreated, map[string]any{"row": r.Seq, "role": "assistant", "content": []any{map[string]string{"type": "text", "text": text}}, "source": "model"})
			}
			for _, p := range e.Parts {
				if c, ok := p.(model.ToolCall); ok {
					add(r, ToolStarted, map[string]any{"call_id": c.ID, "tool": c.Name, "input": json.RawMessage(orEmpty(c.Arguments))})
				}
			}
		case session.ToolResult:
			text := model.Message{Parts: e.Content}.Text()
			d := map[string]any{"call_id": e.CallID, "tool": e.Name, "status": ToolStatus(e.Status), "result": plan.Clamp(text, ResultCap), "truncated": len(text) > ResultCap}
			if e.Change != "" {
				d["diff"] = e.Change
			}
			add(r, ToolFinished, d)
			if e.Status == session.StatusOK {
				if typ, data, ok := planEvent(e); ok {
					add(r, typ, data)
				}
			}
		case session.Notice:
			add(r, Notice, map[string]any{"severity": e.Severity, "title": e.Title, "text": e.Description})
		case session.HookRun:
			add(r, HookFinished, HookData(e))
		case session.Compaction:
			add(r, ContextCompacted, CompactedData(e))
		}
	}
	return out
}

// HookData is hook.finished's payload: one hook run as its row records it.
func HookData(h session.HookRun) map[string]any {
	d := map[string]any{"event": h.Event, "source": h.Source, "command": h.Command, "exit": h.Exit,
		"decision": h.Decision, "duration_ms": h.DurationMS, "stdout": h.Stdout, "stderr": h.Stderr,
		"truncated": h.Truncated, "confined": h.Confined}
	if h.Matcher != "" {
		d["matcher"] = h.Matcher
	}
	if h.Tool != "" {
		d["tool"] = h.Tool
	}
	if h.CallID != "" {
		d["call_id"] = h.CallID
	}
	if h.Reason != "" {
		d["reason"] = h.Reason
	}
	return d
}

// planEvent is the checklist.updated or plan.updated an accepted plan
// call causes, read from the list its result recorded.
func planEvent(r session.ToolResult) (typ string, data map[string]any, ok bool) {
	var dialect string
	switch r.Name {
	case "checklist_add", "checklist_edit":
		typ, dialect = ChecklistUpdated, "checklist"
	case "update_plan", "patch_plan":
		typ, dialect = PlanUpdated, "update_plan"
	case "write_todos":
		typ, dialect = PlanUpdated, "write_todos"
	default:
		return "", nil, false
	}
	var st struct{ Items []plan.Item }
	if len(r.State) == 0 || json.Unmarshal(r.State, &st) != nil || st.Items == nil {
		return "", nil, false
	}
	return typ, PlanData(dialect, st.Items), true
}

// PlanData is a plan event's data: the items and how many are open.
func PlanData(dialect string, items []plan.Item) map[string]any {
	if items == nil {
		items = []plan.Item{}
	}
	return map[string]any{"dialect": dialect, "items": items, "open": len(plan.OpenItems(items))}
}

// Content is a message's parts as events carry them.
func Content(ps model.Parts) []any {
	var out []any
	for _, p := range ps {
		switch p := p.(type) {
		case model.Text:
			out = append(out, map[string]string{"type": "text", "text": p.Text})
		case model.Image:
			out = append(out, map[string]string{"type": "image", "mime_type": p.MediaType, "name": p.Name})
		case model.Resource:
			out = append(out, map[string]string{"type": "resource_link", "uri": p.URI})
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// Source names where a user message came from.
func Source(s string) string {
	switch s {
	case session.SourceUser:
		return "client"
	case session.SourceSchedule:
		return "schedule"
	case session.SourceSteer:
		return "inbox"
	case session.SourceTask:
		return "task_report"
	}
	return s
}

// ToolStatus names how a tool call ended.
func ToolStatus(s string) string {
	switch s {
	case session.StatusOK:
		return "completed"
	case session.StatusRefused:
		return "refused"
	case session.StatusCanceled:
		return "cancelled"
	}
	return "failed"
}

func orEmpty(b json.RawMessage) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// CompactedData is context.compacted's payload: what the row records of
// the compaction, what it dropped included.
func CompactedData(c session.Compaction) map[string]any {
	d := map[string]any{"status": "completed", "kept_from_row": c.KeptFrom}
	if c.Trigger != "" {
		d["trigger"] = c.Trigger
	}
	if c.Focus != "" {
		d["focus"] = c.Focus
	}
	if c.Dropped != nil {
		d["dropped"] = *c.Dropped
	}
	return d
}

// CompactingData is context.compacting's payload: why a compaction
// starts and how full the window was.
func CompactingData(ev agent.CompactionStarted) map[string]any {
	d := map[string]any{"trigger": ev.Trigger, "tokens_before": ev.TokensBefore}
	if ev.Focus != "" {
		d["focus"] = ev.Focus
	}
	return d
}
