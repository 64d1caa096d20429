package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	return f.run(ctx, c)
}

type fixture struct {
	db   *sqlite.DB
	prov *script.Provider
	tool *fakeTool
	opts host.Options
}

func newFixture(t *testing.T, rounds string) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meka.db")
	db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, prov: script.New(s)}
	f.tool = &fakeTool{spec: tool.Spec{Name: "write", Description: "write", Schema: json.RawMessage(`{"type":"object"}`), Level: permission.Workspace, Kind: tool.KindEdit},
		run: func(context.Context, tool.Call) (tool.Result, error) { return tool.Text("written"), nil }}
	f.opts = host.Options{
		Store:       db.Sessions(),
		Holder:      session.Holder{Token: "one"},
		Profiles:    func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: f.prov}, nil },
		Tools:       func(host.Env) ([]tool.Tool, error) { return []tool.Tool{f.tool}, nil },
		Permissions: host.Permissions{Default: permission.Read},
		DataDir:     t.TempDir(),
	}
	return f
}

func (f *fixture) host(t *testing.T) *host.Host {
	t.Helper()
	h, err := host.New(f.opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

func lastResult(t *testing.T, s *host.Session) session.ToolResult {
	t.Helper()
	rows := s.Engine().Rows()
	for i := len(rows) - 1; i >= 0; i-- {
		if tr, ok := rows[i].Entry.(session.ToolResult); ok {
			return tr
		}
	}
	t.Fatal("no tool result")
	return session.ToolResult{}
}

func TestCreatePromptReopen(t *testing.T) {
	f := newFixture(t, `[{"text":"hello"},{"text":"again"}]`)
	h := f.host(t)
	dir := t.TempDir()
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	unsub := s.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(agent.TextChunk); ok {
			chunks = append(chunks, c.Text)
		}
	})
	res, err := s.Prompt(t.Context(), model.Text{Text: "say hello"})
	unsub()
	if err != nil || res.Reply != "hello" || strings.Join(chunks, "") != "hello" {
		t.Fatalf("res %+v err %v chunks %v", res, err, chunks)
	}
	meta, err := f.db.Sessions().Get(t.Context(), s.ID()[:8])
	if err != nil || meta.Title != "say hello" || meta.Permission != "read" {
		t.Fatalf("meta %+v err %v", meta, err)
	}
	canon, _ := filepath.EvalSymlinks(dir)
	if meta.Cwd != canon {
		t.Fatalf("cwd %q want %q", meta.Cwd, canon)
	}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	// Reopened, the session continues where it was.
	s2, err := h.Latest(t.Context(), dir)
	if err != nil || s2.ID() != s.ID() {
		t.Fatalf("latest %v err %v", s2, err)
	}
	res, err = s2.Prompt(t.Context(), model.Text{Text: "more"})
	if err != nil || res.Turn != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
	msgs := f.prov.Requests()[1].Messages
	if len(msgs) != 3 || msgs[0].Text() != "say hello" {
		t.Fatalf("resumed request %+v", msgs)
	}
}

func TestLockRefusesSecondHolder(t *testing.T) {
	f := newFixture(t, `[]`)
	h1 := f.host(t)
	s, err := h1.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.opts.Holder.Token = "two"
	h2 := f.host(t)
	_, err = h2.Open(t.Context(), s.ID())
	var held *session.HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second open: %v", err)
	}
	if err := h1.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Open(t.Context(), s.ID()); err != nil {
		t.Fatalf("open after release: %v", err)
	}
}

func TestForkIsIndependent(t *testing.T) {
	f := newFixture(t, `[{"text":"one"},{"text":"forked"}]`)
	// A fork reuses the prompt recorded the same day; a pinned clock keeps
	// a run that crosses midnight from building a new one.
	f.opts.Now = func() time.Time { return time.Date(2026, 5, 6, 23, 59, 59, 0, time.UTC) }
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if _, err := s.Prompt(t.Context(), model.Text{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	fk, err := h.Fork(t.Context(), s.ID(), -1)
	if err != nil || fk.ID() == s.ID() {
		t.Fatalf("fork %v err %v", fk, err)
	}
	if _, err := fk.Prompt(t.Context(), model.Text{Text: "b"}); err != nil {
		t.Fatal(err)
	}
	// The recorded system prompt travels with the fork, which reuses it.
	if len(s.Engine().Rows()) != 3 || len(fk.Engine().Rows()) != 5 {
		t.Fatalf("rows: original %d fork %d", len(s.Engine().Rows()), len(fk.Engine().Rows()))
	}
	if fk.SystemPrompt() != s.SystemPrompt() {
		t.Fatal("the fork built a prompt of its own")
	}
}

func TestLevelChangeAppliesToNextCall(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"a","name":"write"}]},{"tool_calls":[{"id":"b","name":"write"}]},{"text":"done"}]`)
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	calls := 0
	f.tool.run = func(context.Context, tool.Call) (tool.Result, error) { calls++; return tool.Text("ok"), nil }
	// The first call is refused at read; the refusal result raises the
	// level, as a user switching modes mid-turn would.
	unsub := s.Subscribe(func(ev agent.Event) {
		if fin, ok := ev.(agent.ToolCallFinished); ok && fin.CallID == "a" {
			if err := s.SetLevel(context.Background(), permission.Workspace); err != nil {
				t.Error(err)
			}
		}
	})
	defer unsub()
	if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	rows := s.Engine().Rows()
	var statuses []string
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			statuses = append(statuses, tr.Status)
		}
	}
	if strings.Join(statuses, ",") != "refused,ok" || calls != 1 {
		t.Fatalf("statuses %v calls %d", statuses, calls)
	}
	meta, _ := f.db.Sessions().Get(t.Context(), s.ID())
	if meta.Permission != "workspace" {
		t.Fatalf("stored level %q", meta.Permission)
	}
}

func TestApprovals(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"a","name":"write"}]},{"tool_calls":[{"id":"b","name":"write","arguments":{"x":1}}]},{"text":"done"}]`
	cases := []struct {
		answer   permission.Decision
		statuses string
		asks     int
	}{
		{permission.Allow, "ok,ok", 2},
		{permission.AlwaysAllow, "ok,ok", 1},
		{permission.Deny, "refused,refused", 2},
		{permission.AlwaysDeny, "refused,refused", 1},
	}
	for _, tc := range cases {
		t.Run(tc.answer.String(), func(t *testing.T) {
			f := newFixture(t, rounds)
			f.opts.Permissions.Approvals = true
			h := f.host(t)
			s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
			asks := 0
			s.SetAsker(permission.AskerFunc(func(_ context.Context, req permission.Request) (permission.Decision, error) {
				asks++
				if req.Tool != "write" || req.Needs != permission.Workspace || req.Has != permission.Read {
					t.Errorf("request %+v", req)
				}
				return tc.answer, nil
			}))
			if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
				t.Fatal(err)
			}
			var statuses []string
			for _, r := range s.Engine().Rows() {
				if tr, ok := r.Entry.(session.ToolResult); ok {
					statuses = append(statuses, tr.Status)
				}
			}
			if strings.Join(statuses, ",") != tc.statuses || asks != tc.asks {
				t.Fatalf("statuses %v asks %d", statuses, asks)
			}
		})
	}
	t.Run("nobody attached denies", func(t *testing.T) {
		f := newFixture(t, rounds)
		f.opts.Permissions.Approvals = true
		h := f.host(t)
		s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
		if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
			t.Fatal(err)
		}
		if tr := lastResult(t, s); tr.Status != session.StatusRefused {
			t.Fatalf("result %+v", tr)
		}
	})
}

func TestSteerRidesToolResults(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"a","name":"write"}]},{"text":"done"}]`)
	f.opts.Permissions.Default = permission.Workspace
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if s.Steer(model.Text{Text: "ignored"}) {
		t.Fatal("steer accepted with no turn running")
	}
	f.tool.run = func(context.Context, tool.Call) (tool.Result, error) {
		if !s.Steer(model.Text{Text: "also do X"}) {
			t.Error("steer refused mid-turn")
		}
		return tool.Text("ok"), nil
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	msgs := f.prov.Requests()[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleUser || last.Text() != "also do X" || msgs[len(msgs)-2].Role != model.RoleTool {
		t.Fatalf("request %+v", msgs)
	}
}

func TestCreateRefusesBadInput(t *testing.T) {
	f := newFixture(t, `[]`)
	f.opts.Permissions.Enabled = []permission.Level{permission.Read}
	h := f.host(t)
	if _, err := h.Create(t.Context(), host.CreateOptions{Cwd: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("created a session in a missing directory")
	}
	w := permission.Workspace
	if _, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir(), Permission: &w}); !errors.Is(err, host.ErrLevelNotEnabled) {
		t.Fatalf("err %v", err)
	}
	page, _ := f.db.Sessions().List(t.Context(), session.ListOptions{})
	if len(page.Sessions) != 0 {
		t.Fatalf("stored %d sessions", len(page.Sessions))
	}
}

func TestApprovalsOffRefusalNamesTheLevel(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"a","name":"write"}]},{"text":"one"},{"tool_calls":[{"id":"b","name":"write"}]},{"text":"two"}]`)
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	s.SetAsker(permission.AskerFunc(func(context.Context, permission.Request) (permission.Decision, error) {
		return permission.Allow, nil
	}))
	if _, err := s.Prompt(t.Context(), model.Text{Text: "off"}); err != nil {
		t.Fatal(err)
	}
	// Off, the model is told which level the call needs, not that a person
	// denied it.
	if tr := lastResult(t, s); tr.Status != session.StatusRefused || !strings.Contains(tr.Content[0].(model.Text).Text, "needs the workspace permission level") {
		t.Fatalf("refusal %+v", tr)
	}
	if err := s.SetApprovals(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "on"}); err != nil {
		t.Fatal(err)
	}
	if tr := lastResult(t, s); tr.Status != session.StatusOK {
		t.Fatalf("approved call %+v", tr)
	}
}

func TestApprovalsRestoredOnReopen(t *testing.T) {
	f := newFixture(t, `[]`)
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if s.Approvals() {
		t.Fatal("approvals on, the policy says off")
	}
	if err := s.SetApprovals(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	again, err := h.Open(t.Context(), s.ID())
	if err != nil || !again.Approvals() {
		t.Fatalf("reopened: approvals %v err %v", again != nil && again.Approvals(), err)
	}
}

// Several goroutines opening one session share it: none of them races the
// others for the lock and fails.
func TestConcurrentOpensShareTheSession(t *testing.T) {
	f := newFixture(t, `[]`)
	f.opts.Holder = session.Holder{} // as in production: a token per lock
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	id := s.ID()
	if err := h.CloseSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	const n = 8
	got := make([]*host.Session, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = h.Open(t.Context(), id) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("open %d: %v (same session: %v)", i, errs[i], got[i] == got[0])
		}
	}
}

// OpenIn records the front door's workspace once the lock is taken, and
// the session is built in it.
func TestOpenInRecordsTheWorkspace(t *testing.T) {
	f := newFixture(t, `[]`)
	var cwds []string
	f.opts.Tools = func(env host.Env) ([]tool.Tool, error) {
		cwds = append(cwds, env.Meta.Cwd)
		return nil, nil
	}
	h := f.host(t)
	s, _ := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	moved, _ := filepath.EvalSymlinks(t.TempDir())
	extra, _ := filepath.EvalSymlinks(t.TempDir())
	again, err := h.OpenIn(t.Context(), s.ID(), host.Workspace{Cwd: moved, AdditionalDirs: []string{extra}})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := f.db.Sessions().Get(t.Context(), s.ID())
	if stored.Cwd != moved || len(stored.AdditionalDirs) != 1 || again.Meta().Cwd != moved || cwds[len(cwds)-1] != moved {
		t.Fatalf("stored %+v, open %+v, built in %v", stored, again.Meta(), cwds)
	}
	// The same workspace again: the open session is returned as it is.
	same, err := h.OpenIn(t.Context(), s.ID(), host.Workspace{Cwd: moved, AdditionalDirs: []string{extra}})
	if err != nil || same != again || len(cwds) != 2 {
		t.Fatalf("reopened in the same workspace: %v, %d builds", err, len(cwds))
	}
}
