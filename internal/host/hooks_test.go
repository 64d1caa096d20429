package host_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// /hooks reports what the composition root listed for the session,
// including what does not run and why.
func TestHooksReport(t *testing.T) {
	f := newFixture(t, `[]`)
	f.opts.Hooks = func(id string) []host.HookInfo {
		return []host.HookInfo{
			{Event: "PreToolUse", Matcher: "Bash", Command: "guard.sh", Source: "/home/p/.claude/settings.json", Timeout: 60, Active: true},
			{Event: "Stop", Command: "check.sh", Source: "/w/.claude/settings.json", Timeout: 30, Confined: true, Why: "the workspace /w is not trusted"},
		}
	}
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	r := s.HooksReport()
	for _, want := range []string{"PreToolUse [Bash] guard.sh", "from /home/p/.claude/settings.json, timeout 60s", "Stop [*] check.sh", "confined; not run: the workspace /w is not trusted"} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %q:\n%s", want, r)
		}
	}
	f.opts.Hooks = nil
	if r := f.host(t).Hooks("x"); r != nil {
		t.Fatal(r)
	}
}

type allowAll struct{}

func (allowAll) Ask(context.Context, permission.Request) (permission.Decision, error) {
	return permission.Allow, nil
}

// An extension's Approvals are told of each approval as it is asked, and
// its Closers' rows are stored as the session closes.
func TestExtensionHostSeams(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"c1","name":"write","arguments":{}}]},{"text":"ok"}]`)
	var mu sync.Mutex
	var asked []string
	f.opts.Extensions = []host.ExtensionFunc{func(host.Env) (host.Extension, error) {
		return host.Extension{
			Approvals: []func(context.Context, permission.Request){func(_ context.Context, r permission.Request) {
				mu.Lock()
				asked = append(asked, r.Tool)
				mu.Unlock()
			}},
			Closers: []func(context.Context) []session.Entry{func(context.Context) []session.Entry {
				return []session.Entry{session.HookRun{Event: "SessionEnd", Source: "s", Command: "bye"}}
			}},
		}, nil
	}}
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetApprovals(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	s.SetAsker(allowAll{})
	if _, err := s.Prompt(t.Context(), model.Text{Text: "write"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != "write" {
		t.Fatalf("asked %q", asked)
	}
	mu.Unlock()
	id := s.ID()
	if err := h.CloseSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	rows, err := f.db.Sessions().Rows(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if hr, ok := last.Entry.(session.HookRun); !ok || hr.Event != "SessionEnd" || last.Turn != 1 {
		t.Fatalf("last row %+v", last)
	}
}
