package hooks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// harness is one session on a real SQLite file, played by a script, in a
// workspace whose .claude/settings.json holds the hooks under test.
type harness struct {
	t     *testing.T
	store session.Store
	id    string
	dir   string // the workspace
	prov  *script.Provider
	shell *fakeShell
	gate  *tool.Gate
}

func newHarness(t *testing.T, rounds ...string) *harness {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dir := t.TempDir()
	store := db.Sessions()
	m, err := store.Create(t.Context(), session.Meta{Cwd: dir, Permission: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: store, id: m.ID, dir: dir, prov: script.New(s), shell: &fakeShell{}}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// settings writes the workspace's .claude/settings.json.
func (h *harness) settings(content string) {
	writeFile(h.t, filepath.Join(h.dir, ".claude", "settings.json"), content)
}

// script writes an executable hook script into the workspace's
// .claude/hooks and returns its path.
func (h *harness) script(name, body string) string {
	p := filepath.Join(h.dir, ".claude", "hooks", name)
	writeFile(h.t, p, "#!/bin/sh\n"+body)
	return p
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

// hookSet reads the workspace's hooks as a trusted workspace's.
func (h *harness) hookSet() *hooks.Set {
	h.t.Helper()
	set, err := hooks.Discover(hooks.Sources{Workspace: h.dir})
	if err != nil {
		h.t.Fatal(err)
	}
	return set
}

func (h *harness) engine(opts hooks.Options) (*agent.Engine, *recorder) {
	h.t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Add(h.shell); err != nil {
		h.t.Fatal(err)
	}
	if opts.Set == nil {
		opts.Set = h.hookSet()
	}
	opts.Runner = &hooks.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, ProjectDir: h.dir}
	opts.SessionID, opts.Cwd = h.id, h.dir
	x := hooks.New(opts).Extension()
	rec := &recorder{}
	e, err := agent.New(agent.Options{
		Provider: h.prov, Log: h, SessionID: h.id, Cwd: h.dir, Tools: reg, Gate: h.gate,
		Guards: x.Guards, PromptGuards: x.PromptGuards, Interceptors: x.Interceptors,
		Events: rec.add,
	}, h.rows())
	if err != nil {
		h.t.Fatal(err)
	}
	return e, rec
}

func (h *harness) run(opts hooks.Options, prompt string) agent.Result {
	h.t.Helper()
	e, _ := h.engine(opts)
	res, err := e.Run(h.t.Context(), session.UserMessage{Parts: model.Parts{model.Text{Text: prompt}}})
	if err != nil {
		h.t.Fatalf("run: %v (%+v)", err, res)
	}
	return res
}

// hookRuns returns the session's hook rows.
func (h *harness) hookRuns() []session.HookRun {
	var out []session.HookRun
	for _, r := range h.rows() {
		if hr, ok := r.Entry.(session.HookRun); ok {
			out = append(out, hr)
		}
	}
	return out
}

func (h *harness) results() []session.ToolResult {
	var out []session.ToolResult
	for _, r := range h.rows() {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			out = append(out, tr)
		}
	}
	return out
}

func (h *harness) notices() []session.Notice {
	var out []session.Notice
	for _, r := range h.rows() {
		if n, ok := r.Entry.(session.Notice); ok {
			out = append(out, n)
		}
	}
	return out
}

func resultText(r session.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Content {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// fakeShell stands for shell_execute: it records the commands it was
// given and runs none.
type fakeShell struct {
	mu   sync.Mutex
	runs []string
}

func (f *fakeShell) Spec() tool.Spec {
	return tool.Spec{Name: "shell_execute", Description: "run", Level: permission.Read,
		Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}
}

func (f *fakeShell) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	var a struct{ Command string }
	_ = json.Unmarshal(c.Arguments, &a)
	f.mu.Lock()
	f.runs = append(f.runs, a.Command)
	f.mu.Unlock()
	return tool.Result{Content: []model.Part{model.Text{Text: "ran " + a.Command}}}, nil
}

func (f *fakeShell) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.runs...)
}

type recorder struct {
	mu     sync.Mutex
	events []agent.Event
}

func (r *recorder) add(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// settingsFor writes a settings file in Claude Code's format with one
// entry for event.
func settingsFor(event, matcher, command string) string {
	e := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command}}}
	if matcher != "" {
		e["matcher"] = matcher
	}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{e}}})
	return string(b)
}

const (
	bashCall = `{"tool_calls":[{"id":"c1","name":"shell_execute","arguments":{"command":"rm -rf /tmp/x"}}]}`
	done     = `{"text":"done"}`
)
