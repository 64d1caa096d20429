package hooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/testenv"
)

func runner(dir string) *hooks.Runner {
	return &hooks.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, ProjectDir: dir}
}

func match(command string, timeout time.Duration) hooks.Match {
	return hooks.Match{Hook: hooks.Hook{Event: hooks.PreToolUse, Command: command, Timeout: timeout, Source: "test"}, Name: "Bash"}
}

// A hook that hangs is killed at its timeout, with what it started, and
// reported as a non-blocking error.
func TestHangingHookTimesOut(t *testing.T) {
	dir := t.TempDir()
	// The child keeps the pipe open: the kill must take the group.
	o := runner(dir).Run(t.Context(), match(`sleep 1000 & echo started; wait`, 200*time.Millisecond), nil)
	if !o.TimedOut || o.Exit != -1 || o.Stdout != "started\n" {
		t.Fatalf("outcome = %+v", o)
	}
	d := hooks.Decide(hooks.PreToolUse, "c1", []hooks.Outcome{o})
	if d.Block || len(d.Notices) != 1 || !strings.Contains(d.Notices[0].Title, "timed out") || d.Runs[0].Decision != "error" {
		t.Fatalf("decision = %+v", d)
	}
}

// A hook that prints 10 MB is read to its end (it is not blocked) and
// kept to the bound; its row keeps less still.
func TestHugeOutputIsBounded(t *testing.T) {
	dir := t.TempDir()
	o := runner(dir).Run(t.Context(), match(`head -c 10485760 /dev/zero | tr '\0' x; echo done >&2`, time.Minute), nil)
	if o.Exit != 0 || !o.Truncated || len(o.Stdout) != hooks.DefaultMaxOutput || o.Stderr != "done\n" {
		t.Fatalf("exit %d truncated %v stdout %d bytes stderr %q", o.Exit, o.Truncated, len(o.Stdout), o.Stderr)
	}
	d := hooks.Decide(hooks.PostToolUse, "c1", []hooks.Outcome{o})
	if r := d.Runs[0]; !r.Truncated || len(r.Stdout) > 4<<10 {
		t.Fatalf("row keeps %d bytes, truncated %v", len(r.Stdout), r.Truncated)
	}
}

// Hooks that match together run at once: each waits for the other's
// mark, which only works if both run in parallel. Identical commands run
// once.
func TestParallelAndDeduplicated(t *testing.T) {
	dir := t.TempDir()
	set, err := hooks.Discover(hooks.Sources{Config: mustSettings(t, `{"hooks":{"PreToolUse":[
		{"matcher":"Bash","hooks":[{"type":"command","command":"touch a; while [ ! -e b ]; do sleep 0.01; done"}]},
		{"matcher":"Bash|Write","hooks":[{"type":"command","command":"touch b; while [ ! -e a ]; do sleep 0.01; done"}]},
		{"matcher":"shell_execute","hooks":[{"type":"command","command":"touch a; while [ ! -e b ]; do sleep 0.01; done"}]}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	ms := set.Match(hooks.PreToolUse, "shell_execute")
	if len(ms) != 2 {
		t.Fatalf("%d matches, want 2 (one duplicate dropped)", len(ms))
	}
	outs := runner(dir).RunAll(t.Context(), ms, func(hooks.Match) []byte { return nil })
	for _, o := range outs {
		if o.Exit != 0 {
			t.Fatalf("outcome = %+v", o)
		}
	}
}

// A confined hook at the read level cannot write outside its temp dir;
// the same hook unconfined can.
func TestConfinedHookCannotWrite(t *testing.T) {
	if _, err := sandbox.Available(sandbox.ReadOnly); err != nil {
		testenv.Skip(t, "no confinement: %v", err)
	}
	dir := t.TempDir()
	r := runner(dir)
	r.Confinement = func() sandbox.Spec { return sandbox.Spec{Mode: sandbox.ReadOnly, TempDir: t.TempDir()} }
	target := filepath.Join(dir, "written")
	m := match(`echo x > "$CLAUDE_PROJECT_DIR/written"`, time.Minute)
	m.Confine = true
	o := r.Run(t.Context(), m, nil)
	if o.Exit == 0 || o.Err != nil {
		t.Fatalf("confined outcome = %+v", o)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("a confined hook at read wrote the workspace")
	}
	if !hooks.Decide(hooks.PreToolUse, "", []hooks.Outcome{o}).Runs[0].Confined {
		t.Error("the row does not say the run was confined")
	}
	m.Confine = false
	if o := r.Run(t.Context(), m, nil); o.Exit != 0 {
		t.Fatalf("unconfined outcome = %+v", o)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatal(err)
	}
}

// A confined hook in a session with no confinement is refused, not run
// unconfined.
func TestConfinedHookWithoutConfinement(t *testing.T) {
	m := match(`true`, time.Minute)
	m.Confine = true
	o := runner(t.TempDir()).Run(t.Context(), m, nil)
	if o.Err == nil {
		t.Fatalf("outcome = %+v", o)
	}
}

func mustSettings(t *testing.T, js string) hooks.Settings {
	t.Helper()
	s, err := hooks.ParseSettings("test.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
