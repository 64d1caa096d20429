package archive

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// builder turns another agent's conversation into meka's rows: a user's
// words open a turn, a model response is an assistant row, and every
// tool call gets a result row before the conversation moves on (one the
// file never recorded is closed as interrupted, as meka closes its own).
type builder struct {
	rows    []session.Row
	turn    int64
	names   map[string]string // call id → tool name
	pending []string          // calls of the last response with no result yet
	first   time.Time
	model   string
}

func newBuilder() *builder { return &builder{names: map[string]string{}} }

func (b *builder) add(at time.Time, e session.Entry) {
	if b.first.IsZero() && !at.IsZero() {
		b.first = at
	}
	b.rows = append(b.rows, session.Row{Turn: max(b.turn, 1), Time: at, Entry: e})
}

func (b *builder) user(at time.Time, text string) {
	b.closePending(at)
	b.turn++
	b.add(at, session.UserMessage{Parts: model.Parts{model.Text{Text: text}}})
}

func (b *builder) assistant(at time.Time, m session.AssistantMessage) {
	b.closePending(at)
	if m.Model == "" {
		m.Model = b.model
	}
	for _, p := range m.Parts {
		if c, ok := p.(model.ToolCall); ok {
			b.names[c.ID] = c.Name
			b.pending = append(b.pending, c.ID)
		}
	}
	b.add(at, m)
}

// result records a call's result; false when no call of the last
// response has that id.
func (b *builder) result(at time.Time, callID, text string, failed bool) bool {
	i := indexOf(b.pending, callID)
	if i < 0 {
		return false
	}
	b.pending = append(b.pending[:i], b.pending[i+1:]...)
	status := session.StatusOK
	if failed {
		status = session.StatusError
	}
	b.add(at, session.ToolResult{CallID: callID, Name: b.names[callID], Status: status, Content: model.Parts{model.Text{Text: text}}})
	return true
}

func (b *builder) closePending(at time.Time) {
	for _, id := range b.pending {
		b.add(at, session.ToolResult{CallID: id, Name: b.names[id], Status: session.StatusInterrupted,
			Content: model.Parts{model.Text{Text: "The call has no result in the imported session."}}})
	}
	b.pending = nil
}

func (b *builder) session(agent, id, cwd string) (Session, error) {
	b.closePending(time.Time{})
	if len(b.rows) == 0 {
		return Session{}, fmt.Errorf("the %s file holds no conversation", agent)
	}
	return Session{Meta: session.Meta{Cwd: cwd, CreatedAt: b.first}, Rows: b.rows, Origin: id}, nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// textOf reads content that is a string or a list of {type, text}
// blocks, keeping the text ones.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var out []string
	for _, bl := range blocks {
		if bl.Text != "" {
			out = append(out, bl.Text)
		}
	}
	return strings.Join(out, "\n")
}

// objectArgs is a call's arguments as a JSON object: raw when it is one,
// else wrapped as {"input": …}.
func objectArgs(raw json.RawMessage) json.RawMessage {
	if isObject(raw) {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if isObject(json.RawMessage(s)) {
			return json.RawMessage(s)
		}
		b, _ := json.Marshal(map[string]string{"input": s})
		return b
	}
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"input": raw})
	return b
}

// ReadFrom reads a session from another agent's file: "claude" (a Claude
// Code session, JSON Lines under ~/.claude/projects) or "codex" (a Codex
// rollout file under ~/.codex/sessions).
func ReadFrom(from string, r io.Reader) (Session, error) {
	switch from {
	case "claude":
		return ReadClaude(r)
	case "codex":
		return ReadCodex(r)
	}
	return Session{}, fmt.Errorf("--from %q: want claude or codex", from)
}
