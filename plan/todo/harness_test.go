package todo_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/todo"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// harness is one session on a real SQLite file.
type harness struct {
	t     *testing.T
	store session.Store
	id    string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := db.Sessions()
	m, err := store.Create(t.Context(), session.Meta{Cwd: t.TempDir(), Permission: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: store, id: m.ID}
}

func (h *harness) Append(ctx context.Context, rows []session.Row) ([]session.Row, error) {
	return h.store.Append(ctx, h.id, rows)
}

func (h *harness) rows() []session.Row {
	h.t.Helper()
	rows, err := h.store.Rows(context.Background(), h.id, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return rows
}

// run is one engine over the session with the dialect composed in.
type run struct {
	e    *agent.Engine
	prov *script.Provider

	mu     sync.Mutex // guards events
	events []agent.Event
}

func (r *run) changes() []plan.Changed {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []plan.Changed
	for _, ev := range r.events {
		if c, ok := ev.(plan.Changed); ok {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) engine(p todo.Plugin, rounds string, opts agent.Options) *run {
	h.t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := p.Compose()
	if err != nil {
		h.t.Fatal(err)
	}
	r := &run{prov: script.New(s)}
	opts.Provider = r.prov
	opts.Log = h
	opts.SessionID = h.id
	opts.Tools = tool.NewRegistry()
	if err := opts.Tools.Add(c.Tools...); err != nil {
		h.t.Fatal(err)
	}
	opts.Contributors = c.Contributors
	opts.Interceptors = c.Interceptors
	opts.Folds = c.Folds
	opts.Events = func(ev agent.Event) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, ev)
	}
	r.e, err = agent.New(opts, h.rows())
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func userText(s string) session.UserMessage {
	return session.UserMessage{Parts: model.Parts{model.Text{Text: s}}}
}

func results(rows []session.Row) []session.ToolResult {
	var out []session.ToolResult
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			out = append(out, tr)
		}
	}
	return out
}

func text(parts model.Parts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// lastUser returns the text of the last user message of a request.
func lastUser(req *model.Request) string {
	var s string
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			s = text(req.Messages[i].Parts)
			break
		}
	}
	// The per-request context follows the conversation.
	return s + text(req.Context)
}

// lastRead is the user's words of a request and then the plan, which
// must never be among them: it is the request's Reminder.
func lastRead(t testing.TB, req *model.Request) string {
	t.Helper()
	if u := lastUser(req); strings.Contains(u, "[run plan]") {
		t.Fatalf("the plan reached the model as the user's words:\n%s", u)
	}
	return lastUser(req) + req.Reminder
}

func texts(items []plan.Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Text+":"+string(it.Status))
	}
	return strings.Join(s, ",")
}

type modelPart = model.Part

func toolCall(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
