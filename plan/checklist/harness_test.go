package checklist_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// harness is one session on a real SQLite file, played by a script.
type harness struct {
	t     *testing.T
	store session.Store
	id    string
	prov  *script.Provider
}

func newHarness(t *testing.T, rounds ...string) *harness {
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
	h := &harness{t: t, store: store, id: m.ID}
	h.play(rounds...)
	return h
}

// play replaces the script the session's model plays from now on.
func (h *harness) play(rounds ...string) {
	h.t.Helper()
	s, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		h.t.Fatal(err)
	}
	h.prov = script.New(s)
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

// setup configures one engine of a session.
type setup struct {
	tasks   checklist.TaskLookup
	deny    []string
	noNudge bool // leave the interceptor out
	extra   []tool.Tool
}

// sess is an engine over the harness's session with a checklist.
type sess struct {
	*agent.Engine
	p      *checklist.Plugin
	events *recorder
}

func (h *harness) engine(s setup) *sess {
	h.t.Helper()
	reg := tool.NewRegistry(s.deny...)
	p := checklist.New(checklist.Options{Tasks: s.tasks, Denied: reg.Denied})
	if err := reg.Add(p.Tools()...); err != nil {
		h.t.Fatal(err)
	}
	if err := reg.Add(s.extra...); err != nil {
		h.t.Fatal(err)
	}
	rec := &recorder{}
	opts := agent.Options{
		Provider: h.prov, Log: h, SessionID: h.id, Tools: reg,
		Folds:      []session.Fold{p.Fold()},
		Compactors: []agent.CompactionContributor{p.Compactor()},
		Events:     rec.add,
	}
	if !s.noNudge {
		opts.Interceptors = []agent.StopInterceptor{p.Interceptor()}
	}
	e, err := agent.New(opts, h.rows())
	if err != nil {
		h.t.Fatal(err)
	}
	return &sess{Engine: e, p: p, events: rec}
}

// run runs a turn that must end without an error.
func (s *sess) run(t *testing.T, input session.UserMessage) agent.Result {
	t.Helper()
	res, err := s.Run(t.Context(), input)
	if err != nil {
		t.Fatalf("run turn: %v (result %+v)", err, res)
	}
	return res
}

type recorder struct {
	mu     sync.Mutex // guards events
	events []agent.Event
}

func (r *recorder) add(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) take() []agent.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// changes returns the plan changes among events.
func changes(evs []agent.Event) []plan.Changed {
	var out []plan.Changed
	for _, ev := range evs {
		if c, ok := ev.(plan.Changed); ok {
			out = append(out, c)
		}
	}
	return out
}

// Script rounds.

func say(s string) string { return fmt.Sprintf(`{"text":%q}`, s) }

func calls(cs ...string) string { return `{"tool_calls":[` + strings.Join(cs, ",") + `]}` }

func call(id, name, args string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"arguments":%s}`, id, name, args)
}

func add(id string, items ...string) string {
	b, _ := json.Marshal(map[string]any{"items": items})
	return call(id, "checklist_add", string(b))
}

func edit(id string, args map[string]string) string {
	b, _ := json.Marshal(args)
	return call(id, "checklist_edit", string(b))
}

func read(id string) string { return call(id, "checklist_read", `{}`) }

func userText(s string) session.UserMessage {
	return session.UserMessage{Parts: model.Parts{model.Text{Text: s}}}
}

// Rows.

func turnRows(rows []session.Row, turn int64) []session.Row {
	var out []session.Row
	for _, r := range rows {
		if r.Turn == turn {
			out = append(out, r)
		}
	}
	return out
}

func reminders(rows []session.Row) []string {
	var out []string
	for _, r := range rows {
		if m, ok := r.Entry.(session.UserMessage); ok && m.Source == session.SourceReminder {
			out = append(out, text(m.Parts))
		}
	}
	return out
}

func notices(rows []session.Row) []session.Notice {
	var out []session.Notice
	for _, r := range rows {
		if n, ok := r.Entry.(session.Notice); ok {
			out = append(out, n)
		}
	}
	return out
}

func results(rows []session.Row) map[string]session.ToolResult {
	out := map[string]session.ToolResult{}
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			out[tr.CallID] = tr
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

// ids renders items compactly (id:status:text[:reason:task]) for
// comparing with what a test expects.
func ids(items []plan.Item) string {
	var out []string
	for _, it := range items {
		s := it.ID + ":" + string(it.Status) + ":" + it.Text
		if it.Reason != "" || it.Task != "" {
			s += ":" + it.Reason + ":" + it.Task
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// tasks is a fake TaskLookup.
type tasks struct {
	mu sync.Mutex // guards state
	// state maps a task id to whether it has reported.
	state map[string]bool
}

func newTasks(running ...string) *tasks {
	t := &tasks{state: map[string]bool{}}
	for _, id := range running {
		t.state[id] = false
	}
	return t
}

func (t *tasks) TaskState(id string) (exists, reported bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reported, exists = t.state[id]
	return exists, reported
}

func (t *tasks) report(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state[id] = true
}
