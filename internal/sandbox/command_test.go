//go:build linux

package sandbox

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// usableBackends lists the backends that can confine on this machine,
// logging why the others cannot.
func usableBackends(t *testing.T) []string {
	t.Helper()
	var out []string
	if abi := landlockABI(); abi >= 1 {
		out = append(out, BackendLandlock)
	} else {
		t.Logf("landlock: the kernel offers no Landlock ABI")
	}
	if _, err := bwrapWorks(); err == nil {
		out = append(out, BackendBwrap)
	} else {
		t.Logf("bwrap: %v", err)
	}
	return out
}

// canonTemp is a t.TempDir with its symlinks resolved.
func canonTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
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
		t.Skip("neither Landlock nor bubblewrap can confine on this machine; tested that confined modes are refused instead")
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
	}
	for _, mode := range []Mode{ReadOnly, Workspace} {
		if b, err := none.available(mode); !errors.Is(err, ErrNoConfinement) {
			t.Errorf("available(%v) = %q, %v; want ErrNoConfinement", mode, b, err)
		}
		for _, backend := range []string{"", BackendLandlock, BackendBwrap} {
			if _, err := none.command(t.Context(), Spec{Args: []string{"true"}, Mode: mode, Backend: backend}); !errors.Is(err, ErrNoConfinement) {
				t.Errorf("command(%v, backend %q) = %v, want ErrNoConfinement", mode, backend, err)
			}
		}
	}
	if b, err := none.available(Unrestricted); b != "" || err != nil {
		t.Errorf("available(Unrestricted) = %q, %v", b, err)
	}
	cmd, err := none.command(t.Context(), Spec{Args: []string{"true"}, Mode: Unrestricted})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Errorf("unrestricted run: %v", err)
	}

	landlockOnly := probe{
		landlockABI: func() int { return 4 },
		bwrap:       none.bwrap,
		executable:  os.Executable,
	}
	if b, err := landlockOnly.available(ReadOnly); b != BackendLandlock || err != nil {
		t.Errorf("available with landlock = %q, %v", b, err)
	}
	if _, err := landlockOnly.command(t.Context(), Spec{Args: []string{"true"}, Backend: BackendBwrap}); !errors.Is(err, ErrNoConfinement) {
		t.Errorf("forced bwrap without bwrap: %v, want ErrNoConfinement", err)
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
			spec.Args = []string{"sh", "-c", "sleep 100 & echo $!; sleep 100"}
			spec.Env = []string{testPath}
			spec.TempDir = canonTemp(t)
			cmd, err := Command(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("background pid %q: %v", line, err)
			}
			cancel()
			if err := cmd.Wait(); err == nil {
				t.Error("Wait after cancel = nil, want the kill")
			}
			assertGone(t, cmd.Process.Pid)
			assertGone(t, pid)
		})
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
	assertGone(t, pid)
	if err := KillGroup(cmd); err != nil {
		t.Errorf("KillGroup of an empty group = %v, want nil", err)
	}
}

// assertGone waits, on a pidfd rather than a sleep, for pid to have
// exited; a process still running after ten seconds survived the kill.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // exited and reaped
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 10_000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd: %v", err)
		}
		if n == 0 {
			t.Fatalf("process %d survived the kill", pid)
		}
		return
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
	got := bwrapArgs([]string{"/ws", "/tmp/x"}, "/ws/sub", "/bin/sh", []string{"sh", "-c", "ls"})
	want := []string{"--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
		"--bind", "/ws", "/ws", "--bind", "/tmp/x", "/tmp/x", "--chdir", "/ws/sub", "--", "/bin/sh", "-c", "ls"}
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
