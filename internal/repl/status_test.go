package repl

import (
	"strings"
	"testing"

	"meka.dev/meka/permission"
)

// /status prints the host's block as it is (the level, sandbox, profile,
// instructions, tokens), and says it spent nothing.
func TestStatusIsTheHostsBlock(t *testing.T) {
	f := newFake()
	got := statusBlock(f)
	want := append(strings.Split(f.Status(), "\n"), "(answered here; no model call)")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("status:\n%s", strings.Join(got, "\n"))
	}
	u := Unopened("test", permission.Workspace, nil)
	if got := strings.Join(statusBlock(u), "\n"); !strings.Contains(got, "No session yet") || !strings.HasPrefix(got, "Permission: workspace") {
		t.Fatalf("status of a session not created yet:\n%s", got)
	}
}
