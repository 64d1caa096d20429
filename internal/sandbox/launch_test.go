//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
)

// launchHolderMarker makes the test binary launch a command, print its
// first line and wait to be killed: TestLaunchedDieWithMeka.
const launchHolderMarker = "__meka_launch_holder"

// launchedSpecs lists a workspace spec on each usable backend, with a
// temp dir a launcher takes.
func launchedSpecs(t *testing.T) []Spec {
	t.Helper()
	var out []Spec
	for _, b := range usableBackends(t) {
		ws := canonTemp(t)
		out = append(out, Spec{Mode: Workspace, Backend: b, Env: []string{testPath}, Dir: ws, Writable: []string{ws}, TempDir: shellTemp(t)})
	}
	if len(out) == 0 {
		testenv.Skip(t, "no backend confines here")
	}
	return out
}

// mustLaunch launches spec, failing the test unless a launcher took it.
func mustLaunch(t *testing.T, ctx context.Context, spec Spec, stdout, stderr io.Writer) *Running {
	t.Helper()
	run, err := Launch(ctx, spec, "", stdout, stderr)
	if err != nil {
		t.Fatal(err)
	}
	if run.proc == nil {
		t.Fatal("the command was not launched")
	}
	return run
}

// runLaunched launches spec as mustLaunch does and waits for it, failing
// the test unless it exits with 0.
func runLaunched(t *testing.T, spec Spec, stdout, stderr io.Writer) *Running {
	t.Helper()
	run := mustLaunch(t, t.Context(), spec, stdout, stderr)
	if err := waitBounded(t, run); err != nil {
		t.Fatal(err)
	}
	return run
}

// waitBounded fails the test if run's Wait takes ten seconds.
func waitBounded(t *testing.T, run *Running) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return: something still holds the output")
		return nil
	}
}

func TestLaunchStatusAndStreams(t *testing.T) {
	for _, spec := range launchedSpecs(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			spec.Args = []string{"sh", "-c", `echo out; echo err >&2; echo "$TMPDIR" > "$TMPDIR/t"; cat "$TMPDIR/t"; pwd; exit 4`}
			var stdout, stderr lockedBuffer
			run := mustLaunch(t, t.Context(), spec, &stdout, &stderr)
			err := waitBounded(t, run)
			var exit *ExitError
			if !errors.As(err, &exit) || exit.Status.Code != 4 {
				t.Errorf("Wait = %v, want exit status 4", err)
			}
			if st, ok := run.Status(); !ok || st.Code != 4 || st.Signal != 0 {
				t.Errorf("Status = %+v, %v; want code 4", st, ok)
			}
			want := fmt.Sprintf("out\n%s\n%s\n", spec.TempDir, spec.Dir)
			if stdout.String() != want || stderr.String() != "err\n" {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), want, "err\n")
			}
		})
	}
}

// A command a launcher runs ends everything it started when it exits,
// even what left its session: its PID namespace ends with it.
func TestLaunchLeftoversKilled(t *testing.T) {
	for _, spec := range launchedSpecs(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			spec.Args = []string{"sh", "-c", "setsid sleep 100 & sleep 100 & echo started"}
			// A bound the test would notice: the sleeps hold the pipe.
			spec.WaitDelay = 10 * time.Minute
			var out lockedBuffer
			runLaunched(t, spec, &out, nil)
			if out.String() != "started\n" {
				t.Errorf("output = %q", out.String())
			}
		})
	}
}

func TestLaunchCancelKillsTree(t *testing.T) {
	for _, spec := range launchedSpecs(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			spec.Args = []string{"sh", "-c", "setsid sleep 100 & echo started; sleep 100"}
			spec.WaitDelay = 10 * time.Minute
			pr, pw := io.Pipe()
			defer pr.Close()
			run := mustLaunch(t, ctx, spec, pw, nil)
			if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, pr)
			cancel()
			if err := waitBounded(t, run); err == nil {
				t.Error("Wait after cancel = nil, want the kill")
			}
			if st, ok := run.Status(); !ok || st.Signal != syscall.SIGKILL {
				t.Errorf("Status = %+v, %v; want killed by SIGKILL", st, ok)
			}
		})
	}
}

// Commands confined alike share a launcher; another confinement gets one
// of its own; a command that cannot start says why, and the launcher
// serves on.
func TestLaunchersShared(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Args = []string{"true"}
	run := func(spec Spec) *launcher {
		t.Helper()
		r := runLaunched(t, spec, io.Discard, io.Discard)
		return r.proc.l
	}
	first := run(spec)
	spec.TempDir = shellTemp(t)
	if again := run(spec); again != first {
		t.Error("a second command confined alike started a launcher of its own")
	}
	other := spec
	other.Writable = []string{canonTemp(t)}
	if run(other) == first {
		t.Error("a command with other roots shared the first's launcher")
	}

	bad := spec
	bad.Dir = spec.Dir + "/missing"
	if _, err := Launch(t.Context(), bad, "", io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Launch in a missing directory = %v, want it named", err)
	}
	if again := run(spec); again != first {
		t.Error("the launcher did not serve on after a command failed to start")
	}
}

// A launcher that dies takes its commands with it, which Wait reports;
// the next command gets a new launcher.
func TestLauncherDeath(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Args = []string{"sh", "-c", "echo started; sleep 100"}
	pr, pw := io.Pipe()
	defer pr.Close()
	run := mustLaunch(t, t.Context(), spec, pw, nil)
	if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	l := run.proc.l
	if err := killGroup(l.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := waitBounded(t, run); !errors.Is(err, errLauncherGone) {
		t.Errorf("Wait = %v, want %v", err, errLauncherGone)
	}
	if _, ok := run.Status(); ok {
		t.Error("Status known for a command whose launcher died")
	}
	spec.Args = []string{"true"}
	next := runLaunched(t, spec, io.Discard, io.Discard)
	if next.proc.l == l {
		t.Error("the dead launcher was used again")
	}
}

// Launch leaves to Command what a launcher cannot take: an unconfined
// command, and a temp dir MkShellTemp did not make.
func TestLaunchFallsBack(t *testing.T) {
	specs := []Spec{{Mode: Unrestricted, Args: []string{"true"}, Env: []string{testPath}}}
	if b := usableBackends(t); len(b) > 0 {
		specs = append(specs, Spec{Mode: ReadOnly, Backend: b[0], Args: []string{"true"}, Env: []string{testPath}, TempDir: canonTemp(t)})
	}
	for _, spec := range specs {
		run, err := Launch(t.Context(), spec, "", io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if run.proc != nil || run.Pid() == 0 {
			t.Errorf("%v with temp dir %q was launched", spec.Mode, spec.TempDir)
		}
		if err := run.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}

// runLaunchHolder launches a command confined on backend, prints its
// first line and waits for its own death.
func runLaunchHolder(backend, mark string) {
	tmp, err := MkShellTemp()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ws := os.TempDir()
	_, err = Launch(context.Background(), Spec{
		Args: []string{"sh", "-c", "echo started; sleep 100; :", mark}, Env: []string{testPath},
		Mode: Workspace, Backend: backend, Dir: ws, Writable: []string{ws}, TempDir: tmp,
	}, "", os.Stdout, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	select {}
}

// When meka dies, so do the commands its launchers run: the launcher dies
// with meka, and its PID namespace with it.
func TestLaunchedDieWithMeka(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range usableBackends(t) {
		t.Run(backend, func(t *testing.T) {
			mark := fmt.Sprintf("meka-launched-%d-%d", os.Getpid(), time.Now().UnixNano())
			holder := exec.Command(exe, launchHolderMarker, backend, mark)
			holder.Stderr = os.Stderr
			out, err := holder.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := holder.Start(); err != nil {
				t.Fatal(err)
			}
			defer holder.Wait()
			defer holder.Process.Kill()
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "started\n" {
				t.Fatalf("holder said %q, %v", line, err)
			}
			// The command, and perhaps its child between fork and exec.
			pids := marked(mark, holder.Process.Pid)
			if len(pids) == 0 {
				t.Fatal("no process carries the mark")
			}
			var fds []int
			for _, pid := range pids {
				fd, err := unix.PidfdOpen(pid, 0)
				if errors.Is(err, unix.ESRCH) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(fd)
				t.Cleanup(func() { unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) })
				fds = append(fds, fd)
			}
			holder.Process.Kill()
			for _, fd := range fds {
				if !testenv.Exited(t, fd, 10*time.Second) {
					t.Error("a launched command outlived meka")
				}
			}
		})
	}
}

// marked returns the processes, other than not, whose command line holds
// mark.
func marked(mark string, not int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == not {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(mark)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A request the launcher cannot read is refused, saying so, and the
// launcher serves on.
func TestLauncherRefusesMalformed(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Args = []string{"true"}
	first := runLaunched(t, spec, io.Discard, io.Discard)
	l := first.proc.l
	for _, body := range []string{"x", "p=/bin/true\x00", "a=true\x00", "p=/bin/true\x00a=true"} {
		conn, theirs, err := socketPair(syscall.SOCK_STREAM)
		if err != nil {
			t.Fatal(err)
		}
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		rights := syscall.UnixRights(int(theirs.Fd()), int(null.Fd()), int(null.Fd()), int(null.Fd()))
		if _, _, err := l.ctrl.WriteMsgUnix([]byte{'c'}, rights, nil); err != nil {
			t.Fatal(err)
		}
		theirs.Close()
		null.Close()
		if err := writeMsg(conn, 'q', []byte(body)); err != nil {
			t.Fatal(err)
		}
		kind, why, err := readMsg(conn)
		conn.Close()
		if err != nil || kind != 'f' || len(why) == 0 {
			t.Errorf("request %q answered %q %q, %v; want a refusal", body, kind, why, err)
		}
	}
	again := runLaunched(t, spec, io.Discard, io.Discard)
	if again.proc.l != l {
		t.Error("the launcher did not serve on")
	}
}

// Commands confined alike share their launcher's closed network: a server
// one starts on 127.0.0.1 is reachable by the next.
func TestLaunchedShareLoopback(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range launchedSpecs(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			spec.Env = append(spec.Env, "GORACE=atexit_sleep_ms=0")
			server := spec
			server.Args = []string{exe, attackMarker, "tcp-listen"}
			pr, pw := io.Pipe()
			defer pr.Close()
			srv := mustLaunch(t, t.Context(), server, pw, nil)
			addr, err := bufio.NewReader(pr).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, pr)
			client := spec
			client.TempDir = shellTemp(t)
			client.Args = []string{exe, attackMarker, "tcp", strings.TrimSpace(addr)}
			// Stderr apart: a -cover test binary warns there as it starts.
			var out, errOut lockedBuffer
			run := mustLaunch(t, t.Context(), client, &out, &errOut)
			if err := waitBounded(t, run); err != nil || out.String() != "ok\n" {
				t.Errorf("client = %q, %v (stderr %q); want ok", out.String(), err, errOut.String())
			}
			if run.proc.l != srv.proc.l {
				t.Error("the two commands had launchers of their own")
			}
			if err := waitBounded(t, srv); err != nil {
				t.Errorf("server: %v", err)
			}
		})
	}
}

// A launched command without a directory runs in meka's, as exec.Cmd's.
func TestLaunchDirDefaultsToMeka(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Dir, spec.Args = "", []string{"pwd"}
	var out lockedBuffer
	runLaunched(t, spec, &out, nil)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != wd {
		t.Errorf("pwd = %q, want %q", got, wd)
	}
}

// At most maxLaunchers run: an idle one makes way for a new confinement,
// and with every one busy a command starts as Command builds it.
func TestLaunchersBounded(t *testing.T) {
	base := launchedSpecs(t)[0]
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var busy []*Running
	defer func() {
		cancel()
		for _, r := range busy {
			r.Wait()
		}
	}()
	for i := range maxLaunchers + 1 {
		spec := base
		spec.Writable = []string{canonTemp(t)}
		spec.TempDir = shellTemp(t)
		spec.Args = []string{"sleep", "100"}
		run, err := Launch(ctx, spec, "", io.Discard, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		busy = append(busy, run)
		pool.mu.Lock()
		n := len(pool.m)
		pool.mu.Unlock()
		if n > maxLaunchers {
			t.Fatalf("%d launchers run", n)
		}
		if launched := run.proc != nil; launched != (i < maxLaunchers) {
			t.Errorf("command %d launched = %v with %d launchers busy", i, launched, i)
		}
	}
}

// The idle launcher used longest ago is the one that makes way.
func TestLaunchersEvictLeastRecent(t *testing.T) {
	base := launchedSpecs(t)[0]
	base.Args = []string{"true"}
	var ls []*launcher
	for range maxLaunchers {
		spec := base
		spec.Writable = []string{canonTemp(t)}
		spec.TempDir = shellTemp(t)
		run := runLaunched(t, spec, io.Discard, io.Discard)
		ls = append(ls, run.proc.l)
	}
	spec := base
	spec.Writable = []string{canonTemp(t)}
	spec.TempDir = shellTemp(t)
	runLaunched(t, spec, io.Discard, io.Discard)
	pool.mu.Lock()
	defer pool.mu.Unlock()
	if pool.m[ls[0].key] == ls[0] {
		t.Error("the launcher used longest ago still runs")
	}
	for _, l := range ls[1:] {
		if pool.m[l.key] != l {
			t.Error("a launcher used since was ended")
		}
	}
}

// A root replaced since its launcher started (removed and made again)
// gets a new launcher, whose commands write the new one.
func TestLauncherFollowsReplacedRoot(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Args = []string{"true"}
	first := runLaunched(t, spec, io.Discard, io.Discard)
	ws := spec.Writable[0]
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	spec.TempDir = shellTemp(t)
	spec.Args = []string{"sh", "-c", "echo x > made"}
	again := runLaunched(t, spec, io.Discard, io.Discard)
	if again.proc.l == first.proc.l {
		t.Error("the launcher of the removed root was used again")
	}
	if _, err := os.Stat(ws + "/made"); err != nil {
		t.Errorf("the command's write is not in the new root: %v", err)
	}
}

// An outside socket made again at the same path (an agent restarted) is
// masked as the first was.
func TestLauncherMasksRemadeSocket(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := canonTemp(t) + "/agent.sock"
	listen := func() net.Listener {
		t.Helper()
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go acceptAll(l)
		return l
	}
	spec := launchedSpecs(t)[0]
	spec.Env = append(spec.Env, "GORACE=atexit_sleep_ms=0")
	spec.Args = []string{exe, attackMarker, "unix", sock}
	for i := range 2 {
		l := listen()
		spec.TempDir = shellTemp(t)
		var out lockedBuffer
		runLaunched(t, spec, &out, nil)
		if !strings.HasPrefix(out.String(), "denied") {
			t.Errorf("socket %d: the command reached it: %q", i, out.String())
		}
		l.Close() // removes the file
	}
}

// A .git made again since its launcher started (cloned afresh) has its
// hooks and config kept read-only as the first had.
func TestLauncherProtectsRemadeGit(t *testing.T) {
	spec := launchedSpecs(t)[0]
	ws := spec.Writable[0]
	spec.Args = []string{"sh", "-c", `echo x > .git/hooks/pre-commit; echo x > .git/config; echo x > file`}
	for i := range 2 {
		if err := os.RemoveAll(ws + "/.git"); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(ws+"/.git", 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, ws+"/.git/config", "[core]\n")
		spec.TempDir = shellTemp(t)
		run := mustLaunch(t, t.Context(), spec, io.Discard, io.Discard)
		waitBounded(t, run) // the hook's refusal fails the command; judged by the files
		if _, err := os.Stat(ws + "/file"); err != nil {
			t.Fatalf("round %d: the command did not run: %v", i, err)
		}
		if _, err := os.Stat(ws + "/.git/hooks/pre-commit"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("round %d: a hook was written: %v", i, err)
		}
		if b, _ := os.ReadFile(ws + "/.git/config"); string(b) != "[core]\n" {
			t.Errorf("round %d: .git/config = %q", i, b)
		}
	}
}

// A launcher that cannot start (it says why, dies, or never says it
// serves) is refused with its reason, and its commands start as Command
// builds them.
func TestLauncherThatCannotStart(t *testing.T) {
	defer func(d time.Duration) { launcherStartup = d }(launcherStartup)
	launcherStartup = 300 * time.Millisecond
	dir := canonTemp(t)
	for _, tc := range []struct{ name, script, why string }{
		{"says why", "printf 'ecannot mount /x' >&3; exit 126", "cannot mount /x"},
		{"dies", "echo broken >&2; exit 1", "broken"},
		{"hangs", "exec sleep 100", "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			mustWrite(t, script, "#!/bin/sh\n"+tc.script+"\n")
			if err := os.Chmod(script, 0o755); err != nil {
				t.Fatal(err)
			}
			p := hostProbe()
			p.executable = func() (string, error) { return script, nil }
			spec := launchedSpecs(t)[0]
			spec.Args = []string{"true"}
			c, err := p.confine(spec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.startLauncher(c, shellTempRoot()); err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("startLauncher = %v, want an error saying %q", err, tc.why)
			}
			if _, ok, err := p.launch(t.Context(), c, spec, "", io.Discard, io.Discard); ok {
				t.Errorf("launch took the command (%v) with no launcher to run it", err)
			}
		})
	}
}

// stopLauncher stops l (SIGSTOP to its process group: the helper, or
// bubblewrap and the helper) and returns a pidfd of its first process.
func stopLauncher(t *testing.T, l *launcher) int {
	t.Helper()
	fd, err := unix.PidfdOpen(l.cmd.Process.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.cmd.Process.Kill(); unix.Close(fd) })
	if err := unix.Kill(-l.cmd.Process.Pid, unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return fd
}

// A launcher that hangs (here, stopped) does not hang meka: a command it
// does not take in time goes to a new launcher, and the hung one is ended.
func TestLauncherHungAtStart(t *testing.T) {
	spec := launchedSpecs(t)[0]
	spec.Args = []string{"true"}
	hung := runLaunched(t, spec, io.Discard, io.Discard).proc.l
	fd := stopLauncher(t, hung)
	hung.answer = 300 * time.Millisecond // its replacement keeps the whole bound
	spec.TempDir = shellTemp(t)
	if next := runLaunched(t, spec, io.Discard, io.Discard); next.proc.l == hung {
		t.Error("the hung launcher ran the command")
	}
	if !testenv.Exited(t, fd, 10*time.Second) {
		t.Error("the hung launcher was left running")
	}
}

// Canceling a command whose launcher hangs returns within the command's
// WaitDelay, the launcher and the command ended.
func TestLauncherHungAtCancel(t *testing.T) {
	spec := launchedSpecs(t)[0]
	mark := fmt.Sprintf("meka-hung-%d-%d", os.Getpid(), time.Now().UnixNano())
	spec.Args = []string{"sh", "-c", "echo started; sleep 100; :", mark}
	spec.WaitDelay = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	defer pr.Close()
	run := mustLaunch(t, ctx, spec, pw, nil)
	if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	pids := marked(mark, 0)
	if len(pids) == 0 {
		t.Fatal("no process carries the mark")
	}
	cmdFD, err := unix.PidfdOpen(pids[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cmdFD)
	fd := stopLauncher(t, run.proc.l)
	cancel()
	if err := waitBounded(t, run); !errors.Is(err, errLauncherGone) {
		t.Errorf("Wait = %v, want %v", err, errLauncherGone)
	}
	if !testenv.Exited(t, fd, 10*time.Second) {
		t.Error("the hung launcher was left running")
	}
	if !testenv.Exited(t, cmdFD, 10*time.Second) {
		t.Error("the command outlived its hung launcher")
	}
}
