package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// Entry is a feed event to store: what happened, in which session.
type Entry struct {
	SessionID string
	Turn      int64
	Type      string
	Data      json.RawMessage
}

// Event is a stored feed event, with its durable id.
type Event struct {
	ID int64
	Entry
	Time time.Time
}

// FeedStore is where feed events are kept. Implementations are safe for
// concurrent use; ids are global and strictly increasing in commit order.
type FeedStore interface {
	Append(ctx context.Context, entries []Entry) ([]Event, error)
	// After returns up to limit events with an id above after, oldest
	// first; a non-empty sessionID keeps that session's only.
	After(ctx context.Context, after int64, sessionID string, limit int) ([]Event, error)
	// Bounds returns the oldest and newest ids, 0 and 0 when empty.
	Bounds(ctx context.Context) (oldest, newest int64, err error)
	// Changed is closed at this process's next commit of events.
	Changed() <-chan struct{}
}

// resultCap bounds a tool result carried by tool.finished.
const resultCap = 8 << 10

// RowEvents maps rows appended to a session to the feed events they
// cause. It is pure, so a store calls it inside the transaction that
// stores the rows: a row and its events commit together.
func RowEvents(sessionID string, rows []session.Row) []Entry {
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
			add(r, "message.created", map[string]any{"row": r.Seq, "role": "user", "content": content(e.Parts), "source": source(e.Source)})
		case session.AssistantMessage:
			if text := model.Message(model.Message{Parts: e.Parts}).Text(); text != "" {
				add(r, "message.created", map[string]any{"row": r.Seq, "role": "assistant", "content": []any{map[string]string{"type": "text", "text": text}}, "source": "model"})
			}
			for _, p := range e.Parts {
				if c, ok := p.(model.ToolCall); ok {
					add(r, "tool.started", map[string]any{"call_id": c.ID, "tool": c.Name, "input": json.RawMessage(orEmpty(c.Arguments))})
				}
			}
		case session.ToolResult:
			text := model.Message{Parts: e.Content}.Text()
			d := map[string]any{"call_id": e.CallID, "tool": e.Name, "status": toolStatus(e.Status), "result": plan.Clamp(text, resultCap), "truncated": len(text) > resultCap}
			if e.Change != "" {
				d["diff"] = e.Change
			}
			add(r, "tool.finished", d)
			if e.Status == session.StatusOK {
				if typ, data, ok := planEvent(e); ok {
					add(r, typ, data)
				}
			}
		case session.Notice:
			add(r, "notice", map[string]any{"severity": e.Severity, "title": e.Title, "text": e.Description})
		case session.Compaction:
			add(r, "context.compacted", map[string]any{"status": "completed", "kept_from_row": e.KeptFrom})
		}
	}
	return out
}

// planEvent is the checklist.updated or plan.updated an accepted plan
// call causes, read from the list its result recorded.
func planEvent(r session.ToolResult) (typ string, data map[string]any, ok bool) {
	var dialect string
	switch r.Name {
	case "checklist_add", "checklist_edit":
		typ, dialect = "checklist.updated", "checklist"
	case "update_plan", "patch_plan":
		typ, dialect = "plan.updated", "update_plan"
	case "write_todos":
		typ, dialect = "plan.updated", "write_todos"
	default:
		return "", nil, false
	}
	var st struct{ Items []plan.Item }
	if len(r.State) == 0 || json.Unmarshal(r.State, &st) != nil || st.Items == nil {
		return "", nil, false
	}
	return typ, planData(dialect, st.Items), true
}

// planData is a plan event's data: the items and how many are open.
func planData(dialect string, items []plan.Item) map[string]any {
	if items == nil {
		items = []plan.Item{}
	}
	return map[string]any{"dialect": dialect, "items": items, "open": len(plan.OpenItems(items))}
}

func content(ps model.Parts) []any {
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

func source(s string) string {
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

func toolStatus(s string) string {
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

// frame is one SSE frame's payload, the same envelope webhooks carry.
type frame struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	SessionID string          `json:"session_id,omitempty"`
	Turn      int64           `json:"turn,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// outgoing is the frame an event goes out as, to a stream or a webhook:
// a failed turn's provider text travels only when relaying is on
// (host.RelayNotice, the policy every front door applies).
func (srv *Server) outgoing(e Event) frame {
	f := e.frame()
	if e.Type != "notice" {
		return f
	}
	var n struct {
		Severity string `json:"severity"`
		Title    string `json:"title"`
		Text     string `json:"text"`
	}
	if json.Unmarshal(e.Data, &n) != nil {
		return f
	}
	kept := host.RelayNotice(session.Notice{Title: n.Title, Description: n.Text}, srv.opts.RelayProviderErrors)
	if kept.Description != n.Text {
		n.Text = kept.Description
		f.Data = mustJSON(n)
	}
	return f
}

func (e Event) frame() frame {
	return frame{ID: strconv.FormatInt(e.ID, 10), Type: e.Type, Timestamp: e.Time.UTC(), SessionID: e.SessionID, Turn: e.Turn, Data: e.Data}
}
