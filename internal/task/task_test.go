//go:build linux

package task

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/testenv"
)

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// step is how far the fake clock moves on every reading.
const step = 12*time.Minute + 4*time.Second

// fakeClock advances by step each time it is read.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(step)
	return c.t
}

// newRegistry returns a registry whose ended tasks arrive on the channel,
// closed when the test ends.
func newRegistry(t *testing.T) (*Registry, <-chan Task) {
	t.Helper()
	done := make(chan Task, 16)
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	r := NewRegistry(Options{Dir: t.TempDir(), Now: clock.Now, OnDone: func(t Task) { done <- t }})
	t.Cleanup(func() { r.Close() })
	return r, done
}

func TestTaskExits(t *testing.T) {
	r, done := newRegistry(t)
	started, err := r.Start(Spec{Command: "echo out; echo err >&2; exit 3", Env: testEnv, Mode: sandbox.Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	if started.State != Running || started.Exited() || len(started.ID) != 8 {
		t.Errorf("started = %+v, want a running task with an 8-digit id", started)
	}
	got := <-done
	if got.ID != started.ID || got.State != Exited || got.ExitCode != 3 || !got.Exited() || got.Reported {
		t.Errorf("ended = %+v, want exited with code 3, not reported", got)
	}
	if got.Label != "echo out; echo err >&2; exit 3" {
		t.Errorf("label = %q", got.Label)
	}
	if d := got.Ended.Sub(got.Started); d != step {
		t.Errorf("duration = %v, want %v", d, step)
	}
	if b, _ := os.ReadFile(got.Output); string(b) != "out\nerr\n" {
		t.Errorf("output = %q", b)
	}
	if g, ok := r.Get(got.ID); !ok || g != got {
		t.Errorf("Get = %+v, %v; want %+v", g, ok, got)
	}
	if want := "Background task " + got.ID + " finished after 12m 4s"; StageDirection(got) != want {
		t.Errorf("StageDirection = %q, want %q", StageDirection(got), want)
	}
	report := Report([]Task{got}, 0)
	for _, want := range []string{StageDirection(got) + ": exited with code 3.", "Command: echo out; echo err >&2; exit 3", "Output:\nout\nerr\n"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}

	r.MarkReported(got.ID, "unknown")
	if g, _ := r.Get(got.ID); !g.Reported {
		t.Error("MarkReported did not mark the task")
	}
}

// fifo returns a named pipe a task writes one line to, and a function
// that reads that line, blocking until the task has written it.
func fifo(t *testing.T) (string, func() string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, func() string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
}

func TestKill(t *testing.T) {
	r, done := newRegistry(t)
	p, read := fifo(t)
	task, err := r.Start(Spec{Label: "two sleeps", Command: "sleep 100 & echo $! > " + p + "; sleep 100", Env: testEnv, Mode: sandbox.Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	bg := atoi(t, read())
	if _, ok := r.Get(task.ID); !ok {
		t.Fatal("task not registered")
	}
	if r.List()[0].Exited() {
		t.Error("a running task reports Exited")
	}
	killed, err := r.Kill(task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if killed.State != Killed || killed.Outcome() != "killed: killed on request" {
		t.Errorf("killed = %+v (%s)", killed, killed.Outcome())
	}
	if got := <-done; got.ID != task.ID || got.State != Killed {
		t.Errorf("OnDone = %+v", got)
	}
	testenv.AssertGone(t, bg)
	if _, err := r.Kill(task.ID); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Kill = %v, want ErrNotRunning", err)
	}
	if _, err := r.Kill("nope"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Kill(nope) = %v, want ErrUnknown", err)
	}
}

func TestLeftoversKilledWhenTaskEnds(t *testing.T) {
	r, done := newRegistry(t)
	p, read := fifo(t)
	if _, err := r.Start(Spec{Command: "sleep 100 >/dev/null 2>&1 & echo $! > " + p, Env: testEnv, Mode: sandbox.Unrestricted}); err != nil {
		t.Fatal(err)
	}
	bg := atoi(t, read())
	if got := <-done; got.State != Exited || got.ExitCode != 0 {
		t.Errorf("ended = %+v", got)
	}
	testenv.AssertGone(t, bg)
}

func TestTimeout(t *testing.T) {
	r, done := newRegistry(t)
	if _, err := r.Start(Spec{Command: "sleep 100", Env: testEnv, Mode: sandbox.Unrestricted, Timeout: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.State != Killed || got.Reason != "timed out after 50ms" {
		t.Errorf("ended = %+v, want killed by its timeout", got)
	}
}

func TestSignal(t *testing.T) {
	r, done := newRegistry(t)
	if _, err := r.Start(Spec{Command: "kill -SEGV $$", Env: testEnv, Mode: sandbox.Unrestricted}); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.State != Failed || got.Signal != "SIGSEGV" || got.Outcome() != "failed: terminated by signal SIGSEGV" {
		t.Errorf("ended = %+v (%s)", got, got.Outcome())
	}
}

func TestClose(t *testing.T) {
	r, done := newRegistry(t)
	for range 2 {
		if _, err := r.Start(Spec{Command: "sleep 100", Env: testEnv, Mode: sandbox.Unrestricted}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case got := <-done:
			if got.State != Killed || got.Reason != "killed because its session closed" {
				t.Errorf("ended = %+v", got)
			}
		default:
			t.Fatal("Close returned before every OnDone")
		}
	}
	for _, task := range r.List() {
		if !task.Exited() {
			t.Errorf("task %s still running after Close", task.ID)
		}
	}
	if _, err := r.Start(Spec{Command: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestStartFailure(t *testing.T) {
	r, done := newRegistry(t)
	if _, err := r.Start(Spec{Command: "true", Dir: filepath.Join(t.TempDir(), "missing"), Env: testEnv, Mode: sandbox.Unrestricted}); err == nil {
		t.Fatal("Start in a missing directory succeeded")
	}
	if _, err := r.Start(Spec{Command: "  ", Mode: sandbox.Unrestricted}); err == nil {
		t.Fatal("Start of an empty command succeeded")
	}
	if len(r.List()) != 0 {
		t.Errorf("failed starts registered: %+v", r.List())
	}
	// The running directory, which Start notes a command in before
	// starting it, stays; the notes do not.
	entries, _ := os.ReadDir(r.opts.Dir)
	notes, _ := os.ReadDir(filepath.Join(r.opts.Dir, "running"))
	if len(entries) > 1 || len(entries) == 1 && entries[0].Name() != "running" || len(notes) != 0 {
		t.Errorf("failed starts left files: %v, notes %v", entries, notes)
	}
	r.Close()
	if len(done) != 0 {
		t.Error("OnDone called for a task that never started")
	}
}

func TestConfinedTask(t *testing.T) {
	r, done := newRegistry(t)
	ws, out := t.TempDir(), t.TempDir()
	spec := Spec{
		Command:  `echo x > "$WS/in"; echo x > "$OUT/out" || echo refused; echo to-stderr >/dev/stderr; echo tmp > "$TMPDIR/t" && echo tmp-ok; echo "tmpdir=$TMPDIR"`,
		Dir:      ws,
		Env:      append([]string{"WS=" + ws, "OUT=" + out}, testEnv...),
		Mode:     sandbox.Workspace,
		Writable: []string{ws},
	}
	if _, err := sandbox.Available(sandbox.Workspace); err != nil {
		if _, err := r.Start(spec); !errors.Is(err, sandbox.ErrNoConfinement) {
			t.Errorf("Start confined with no backend = %v, want ErrNoConfinement", err)
		}
		testenv.Skip(t, "neither Landlock nor bubblewrap can confine on this machine; tested the refusal instead")
	}
	if _, err := r.Start(spec); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.State != Exited {
		t.Fatalf("ended = %+v", got)
	}
	if _, err := os.Stat(ws + "/in"); err != nil {
		t.Errorf("write inside the workspace failed: %v", err)
	}
	if _, err := os.Stat(out + "/out"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("write outside the workspace: %v", err)
	}
	b, _ := os.ReadFile(got.Output)
	for _, want := range []string{"refused", "to-stderr", "tmp-ok"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("output lacks %q:\n%s", want, b)
		}
	}
	_, tmp, _ := strings.Cut(string(b), "tmpdir=")
	if tmp = strings.TrimSpace(tmp); tmp == "" {
		t.Fatalf("no temp dir in the output:\n%s", b)
	} else if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s left behind: %v", tmp, err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("pid %q: %v", s, err)
	}
	return n
}

// TestLeftoversOfADeadHolder: a registry on the directory of one whose
// process died kills the tasks that one left running.
func TestLeftoversOfADeadHolder(t *testing.T) {
	dir := t.TempDir()
	done := make(chan Task, 1)
	r := NewRegistry(Options{Dir: dir, OnDone: func(t Task) { done <- t }})
	t.Cleanup(func() { r.Close() })
	p, read := fifo(t)
	if _, err := r.Start(Spec{Command: "sleep 100 & echo $! > " + p + "; sleep 100", Env: testEnv, Mode: sandbox.Unrestricted}); err != nil {
		t.Fatal(err)
	}
	bg := atoi(t, read())
	notes, err := os.ReadDir(filepath.Join(dir, "running"))
	if err != nil || len(notes) != 1 {
		t.Fatalf("running notes: %v, %v", notes, err)
	}
	// Make the note's holder a process that has exited, as if this one
	// had died.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(dir, "running", notes[0].Name())
	b, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	_, start, _ := strings.Cut(string(b), " ")
	if err := os.WriteFile(note, []byte(strconv.Itoa(gone.Process.Pid)+" "+start), 0o600); err != nil {
		t.Fatal(err)
	}
	NewRegistry(Options{Dir: dir})
	if got := <-done; got.State == Running {
		t.Errorf("task = %+v, want ended", got)
	}
	testenv.AssertGone(t, bg)
}

// A registry opened on a directory a crashed holder used removes the
// private temp dirs its tasks left.
func TestStaleTempDirsRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "t9.tmp")
	if err := os.MkdirAll(filepath.Join(stale, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(dir, "t9.out")
	if err := os.WriteFile(keep, []byte("output"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(Options{Dir: dir})
	defer r.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale temp dir: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("the output file went too: %v", err)
	}
}
