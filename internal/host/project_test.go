package host_test

import (
	"context"
	"errors"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// A session is on no project unless created on one; a name no project has
// is refused without changing the row; a move while a turn runs is refused.
func TestProjects(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"w","name":"write","arguments":{}}]},{"text":"done"}]`)
	f.opts.Projects = func(context.Context) ([]string, error) { return []string{"api", "web"}, nil }
	f.opts.Permissions.Default = permission.Workspace
	h := f.host(t)
	if _, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir(), Project: "nope"}); !errors.Is(err, host.ErrNoProject) {
		t.Fatalf("create on an unknown project: %v", err)
	}
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil || s.Project() != "" {
		t.Fatalf("new session on %q, %v", s.Project(), err)
	}
	if err := s.SetProject(t.Context(), "web"); err != nil || s.Project() != "web" {
		t.Fatalf("set project: %v (%q)", err, s.Project())
	}
	if err := s.SetProject(t.Context(), "nope"); !errors.Is(err, host.ErrNoProject) {
		t.Fatalf("unknown: %v", err)
	}
	if m, _ := h.Store().Get(t.Context(), s.ID()); m.Project != "web" {
		t.Fatalf("a refused move changed the row to %q", m.Project)
	}
	// Mid-turn: the tool asks for a move while its turn runs.
	var during error
	f.tool.run = func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		during = s.SetProject(ctx, "api")
		return tool.Text("written"), nil
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, agent.ErrBusy) || s.Project() != "web" {
		t.Fatalf("mid-turn move: %v, on %q", during, s.Project())
	}
}
