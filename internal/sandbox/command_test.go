//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
)

// usableBackends lists the backends that can confine on this machine
// with every guarantee, logging why the others cannot. Under CI every
// backend must confine: one that cannot would leave its tests out
// silently.
func usableBackends(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range Check() {
		switch {
		case g.Holds(false):
			out = append(out, g.Backend)
		case testenv.CI():
			t.Fatalf("%s is set and a backend cannot confine here, so its tests would not run: %v", testenv.EnvCI, g)
		default:
			t.Logf("%v", g)
		}
	}
	return out
}

var testPath = "PATH=" + defaultPath

func TestConfinedWrites(t *testing.T) {
	backends := usableBackends(t)
	if len(backends) == 0 {
		for _, mode := range []Mode{ReadOnly, Workspace} {
			if _, err := Command(t.Context(), Spec{Args: []string{"true"}, Mode: mode}); !errors.Is(err, ErrNoConfinement) {
				t.Errorf("Command(%v) with no backend: %v, want ErrNoConfinement", mode, err)
			}
		}
		testenv.Skip(t, "neither Landlock nor bubblewrap can confine on this machine; tested that confined modes are refused instead")
	}
	for _, backend := range backends {
		for _, mode := range []Mode{ReadOnly, Workspace} {
			t.Run(backend+"/"+mode.String(), func(t *testing.T) {
				ws, outside, tmp := canonTemp(t), canonTemp(t), canonTemp(t)
				mustWrite(t, ws+"/keep", "keep")
				mustWrite(t, outside+"/keep", "keep")
				script := `
try() { if eval "$2" 2>/dev/null; then echo "$1 ok"; else echo "$1 denied"; fi; }
try ws-create  'echo x > "$WS/new"'
try ws-remove  'rm "$WS/keep"'
try ws-mkdir   'mkdir "$WS/dir"'
try out-create 'echo x > "$OUT/new"'
try out-remove 'rm "$OUT/keep"'
try out-append 'echo x >> "$OUT/keep"'
try tmp-create 'echo x > "$TMPDIR/new"'
try devnull    'echo x > /dev/null'
try stderr     'echo x > /dev/stderr'
try read-out   'cat "$OUT/keep" >/dev/null'
`
				cmd, err := Command(t.Context(), Spec{
					Args:     []string{"sh", "-c", script},
					Dir:      ws,
					Env:      []string{testPath, "WS=" + ws, "OUT=" + outside},
					Mode:     mode,
					Writable: []string{ws},
					TempDir:  tmp,
					Backend:  backend,
				})
				if err != nil {
					t.Fatal(err)
				}
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("run: %v\n%s", err, out)
				}
				wsVerdict := "denied"
				if mode == Workspace {
					wsVerdict = "ok"
				}
				want := map[string]string{
					"ws-create": wsVerdict, "ws-remove": wsVerdict, "ws-mkdir": wsVerdict,
					"out-create": "denied", "out-remove": "denied", "out-append": "denied",
					"tmp-create": "ok", "devnull": "ok", "stderr": "ok", "read-out": "ok",
				}
				for line := range strings.Lines(string(out)) {
					name, verdict, _ := strings.Cut(strings.TrimSpace(line), " ")
					if w, ok := want[name]; ok && w != verdict {
						t.Errorf("%s: %s, want %s", name, verdict, w)
					}
					delete(want, name)
				}
				if len(want) > 0 {
					t.Errorf("no verdict for %v in output:\n%s", want, out)
				}
				if readString(t, outside+"/keep") != "keep" || readString(t, outside+"/new") != "" {
					t.Error("the command changed a directory outside its roots")
				}
			})
		}
	}
}

func TestNoConfinementRefused(t *testing.T) {
	none := probe{
		landlockABI: func() int { return 0 },
		bwrap:       func() (string, error) { return "", errors.New("exec: \"bwrap\": not found") },
		executable:  os.Executable,
		namespaces:  func() error { return nil },
	}
	for _, mode := range []Mode{ReadOnly, Workspace} {
		if b, err := none.available(mode, false); !errors.Is(err, ErrNoConfinement) {
			t.Errorf("available(%v) = %q, %v; want ErrNoConfinement", mode, b, err)
		}
		for _, backend := range append([]string{""}, Backends...) {
			if _, err := none.command(t.Context(), Spec{Args: []string{"true"}, Mode: mode, Backend: backend}); !errors.Is(err, ErrNoConfinement) {
				t.Errorf("command(%v, backend %q) = %v, want ErrNoConfinement", mode, backend, err)
			}
		}
	}
	if b, err := none.available(Unrestricted, false); b != "" || err != nil {
		t.Errorf("available(Unrestricted) = %q, %v", b, err)
	}
	cmd, err := none.command(t.Context(), Spec{Args: []string{"true"}, Mode: Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Errorf("unrestricted run: %v", err)
	}

	landlockOnly := none
	landlockOnly.landlockABI = func() int { return 7 }
	if b, err := landlockOnly.available(ReadOnly, false); b != BackendLandlock || err != nil {
		t.Errorf("available with landlock = %q, %v", b, err)
	}
	if _, err := landlockOnly.command(t.Context(), Spec{Args: []string{"true"}, Backend: BackendBwrap}); !errors.Is(err, ErrNoConfinement) {
		t.Errorf("forced bwrap without bwrap: %v, want ErrNoConfinement", err)
	}

	// Landlock without namespaces cannot keep metadata or close the
	// network: refused, with the reason, whatever the ABI.
	noNS := landlockOnly
	noNS.namespaces = func() error { return errors.New("user namespaces disabled") }
	for _, network := range []bool{false, true} {
		_, err := noNS.available(Workspace, network)
		if !errors.Is(err, ErrNoConfinement) || !strings.Contains(err.Error(), "user namespaces disabled") {
			t.Errorf("available without namespaces (network %v) = %v, want ErrNoConfinement naming the cause", network, err)
		}
	}
	g := noNS.guarantees(BackendLandlock)
	if !g.Writes || !g.Signals || !g.Secrets || g.Metadata || g.Network {
		t.Errorf("guarantees without namespaces = %+v", g)
	}
	old := noNS
	old.landlockABI = func() int { return 5 }
	if g := old.guarantees(BackendLandlock); g.Signals {
		t.Errorf("ABI 5 without a PID namespace claims signals: %+v", g)
	}
	if d := noNS.describe(false); !strings.HasPrefix(d, "none: shell commands need unrestricted") || !strings.Contains(d, "user namespaces disabled") {
		t.Errorf("describe without namespaces = %q", d)
	}
	if d := landlockOnly.describe(true); d != "landlock (writes, metadata, signals and meka's memory confined; network open ([permissions] network = true))" {
		t.Errorf("describe with landlock = %q", d)
	}
	withBwrap := noNS
	withBwrap.bwrap = func() (string, error) { return "/usr/bin/bwrap", nil }
	if b, err := withBwrap.available(Workspace, false); b != BackendBoth || err != nil {
		t.Errorf("available with bwrap and Landlock but no namespaces = %q, %v; want %s", b, err, BackendBoth)
	}
}

// modes lists Unrestricted and each confined mode on each usable backend.
func modes(t *testing.T) []Spec {
	specs := []Spec{{Mode: Unrestricted}}
	for _, b := range usableBackends(t) {
		specs = append(specs, Spec{Mode: Workspace, Backend: b})
	}
	return specs
}

func TestCancelKillsGroup(t *testing.T) {
	for _, base := range modes(t) {
		t.Run(base.Mode.String()+"/"+base.Backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			spec := base
			// The background sleep holds fd 3, the write end of a pipe: the
			// read end sees EOF once every process holding it is dead,
			// whatever PID namespace they ran in.
			spec.Args = []string{"sh", "-c", "sleep 100 & echo started; sleep 100"}
			spec.Env = []string{testPath}
			spec.TempDir = canonTemp(t)
			cmd, err := Command(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			held, holder := mustPipe(t)
			cmd.ExtraFiles = []*os.File{holder}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			holder.Close()
			if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			cancel()
			if err := cmd.Wait(); err == nil {
				t.Error("Wait after cancel = nil, want the kill")
			}
			testenv.AssertGone(t, cmd.Process.Pid)
			assertClosed(t, held)
		})
	}
}

func mustPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// assertClosed waits, on poll rather than a sleep, for every writer of r
// to be gone; one still there after ten seconds survived the kill.
func assertClosed(t *testing.T, r *os.File) {
	t.Helper()
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(r.Fd()), Events: unix.POLLIN}}, 10_000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pipe: %v", err)
		}
		if n == 0 {
			t.Fatal("a process holding the pipe survived the kill")
		}
		return
	}
}

func TestKillGroupAfterExit(t *testing.T) {
	cmd, err := Command(t.Context(), Spec{
		Args: []string{"sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!"},
		Env:  []string{testPath},
		Mode: Unrestricted,
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("background child already gone before KillGroup: %v", err)
	}
	if err := KillGroup(cmd); err != nil {
		t.Fatal(err)
	}
	testenv.AssertGone(t, pid)
	if err := KillGroup(cmd); err != nil {
		t.Errorf("KillGroup of an empty group = %v, want nil", err)
	}
}

func TestCommandEnv(t *testing.T) {
	for _, base := range modes(t) {
		t.Run(base.Mode.String()+"/"+base.Backend, func(t *testing.T) {
			spec := base
			tmp := canonTemp(t)
			spec.Args = []string{"env"}
			spec.Env = []string{testPath, "A=1", "TMPDIR=/elsewhere"}
			spec.TempDir = tmp
			cmd, err := Command(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			// bwrap sets PWD for its --chdir, as a shell would.
			got := slices.DeleteFunc(strings.Fields(string(out)), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
			slices.Sort(got)
			want := []string{"A=1", testPath, "TMPDIR=" + tmp}
			if !slices.Equal(got, want) {
				t.Errorf("env = %q, want %q", got, want)
			}
		})
	}
}

func TestBwrapArgs(t *testing.T) {
	got := bwrapArgs(bwrapPlan{writable: []string{"/ws", "/tmp/x"}, protected: []string{"/ws/.git/hooks"},
		sockets: []string{"/run/s.sock"}, dir: "/ws/sub", path: "/bin/sh", args: []string{"sh", "-c", "ls"}})
	want := []string{"--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc", "--unshare-net",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", "/ws", "/ws", "--bind", "/tmp/x", "/tmp/x", "--ro-bind", "/ws/.git/hooks", "/ws/.git/hooks",
		"--ro-bind-try", "/dev/null", "/run/s.sock", "--chdir", "/ws/sub", "--", "/bin/sh", "-c", "ls"}
	if !slices.Equal(got, want) {
		t.Errorf("bwrapArgs = %q\nwant %q", got, want)
	}
}

func TestLookPath(t *testing.T) {
	dir := canonTemp(t)
	mustWrite(t, dir+"/tool", "#!/bin/sh\n")
	if err := os.Chmod(dir+"/tool", 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dir+"/plain", "")
	tests := []struct {
		name, pathEnv, want string
		err                 bool
	}{
		{name: "tool", pathEnv: "/nowhere:" + dir, want: dir + "/tool"},
		{name: "plain", pathEnv: dir, err: true},
		{name: "tool", pathEnv: "/nowhere", err: true},
		{name: "./tool", pathEnv: "", want: dir + "/tool"},
		{name: "/bin/sh", pathEnv: "", want: "/bin/sh"},
	}
	for _, tt := range tests {
		got, err := lookPath(tt.name, tt.pathEnv, dir)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("lookPath(%q, %q) = %q, %v; want %q (error %v)", tt.name, tt.pathEnv, got, err, tt.want, tt.err)
		}
	}
	if got, err := lookPath("sh", "", dir); err != nil || !filepath.IsAbs(got) {
		t.Errorf("lookPath(sh) with no PATH = %q, %v; want the default PATH searched", got, err)
	}
}

// TestConfinedLeavesNothing starts a command whose child leaves its
// process group (setsid): unrestricted, it survives the command; confined,
// the command is its PID namespace's process 1 on every backend, whose end
// kills the namespace before the wait returns.
func TestConfinedLeavesNothing(t *testing.T) {
	ws, tmp := canonTemp(t), canonTemp(t)
	cols := []Spec{{Mode: Unrestricted}}
	for _, b := range usableBackends(t) {
		cols = append(cols, Spec{Mode: Workspace, Backend: b})
	}
	for i, spec := range cols {
		mark := fmt.Sprintf("MEKA_TEST_MARK=%d-%d", os.Getpid(), i)
		// The command ends once the child runs sleep: a child between
		// fork and exec may show an empty environment.
		spec.Args = []string{"sh", "-c", "setsid sleep 100 </dev/null >/dev/null 2>&1 & until grep -q sleep /proc/$!/cmdline; do :; done; exit 0"}
		spec.Env, spec.Dir, spec.Writable, spec.TempDir = []string{testPath, mark}, ws, []string{ws}, tmp
		cmd, err := Command(t.Context(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v", spec.Mode, spec.Backend, err)
		}
		// Killing what carries the mark also cleans up after unrestricted.
		left := signalCarrying([]byte(mark), map[int]bool{})
		want := 0
		if spec.Mode == Unrestricted {
			want = 1
		}
		if left != want {
			t.Errorf("%s %s: %d processes left running, want %d", spec.Mode, spec.Backend, left, want)
		}
	}
}
