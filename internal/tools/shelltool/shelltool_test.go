//go:build linux

package shelltool

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

const testPath = "PATH=/usr/local/bin:/usr/bin:/bin"

// dirs is a workspace and a directory outside it, both canonical.
func dirs(t *testing.T) (ws, outside string) {
	t.Helper()
	for _, p := range []*string{&ws, &outside} {
		d, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		*p = d
	}
	return ws, outside
}

func rootsOf(t *testing.T, ws string) func() *sandbox.Roots {
	t.Helper()
	r, err := sandbox.NewRoots(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func() *sandbox.Roots { return r }
}

func noConfinement(mode sandbox.Mode, network bool) (string, error) {
	if mode == sandbox.Unrestricted {
		return "", nil
	}
	return "", sandbox.ErrNoConfinement
}

// call runs a call of sh at level in cwd and returns its result, its text
// and its state.
func call(t *testing.T, sh *Tool, level permission.Level, cwd string, args map[string]any) (tool.Result, string, State) {
	t.Helper()
	return callCtx(t, t.Context(), sh, level, cwd, args, nil)
}

func callCtx(t *testing.T, ctx context.Context, sh *Tool, level permission.Level, cwd string, args map[string]any, output func(string)) (tool.Result, string, State) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sh.Run(ctx, tool.Call{ID: "c1", Name: Name, Arguments: raw, Cwd: cwd, Level: level, Output: output})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var text strings.Builder
	for _, p := range res.Content {
		if tx, ok := p.(model.Text); ok {
			text.WriteString(tx.Text)
		}
	}
	var st State
	if len(res.State) > 0 {
		if err := json.Unmarshal(res.State, &st); err != nil {
			t.Fatal(err)
		}
	}
	return res, text.String(), st
}

func TestSpec(t *testing.T) {
	confined := New(Options{Available: func(sandbox.Mode, bool) (string, error) { return sandbox.BackendLandlock, nil }})
	s := confined.Spec()
	if !strings.Contains(s.Description, "The network is closed") || !strings.Contains(s.Description, "not even modes") {
		t.Errorf("confined description does not say what holds:\n%s", s.Description)
	}
	open := New(Options{Network: true, EnvPassthrough: []string{"GOFLAGS"}, Available: func(_ sandbox.Mode, network bool) (string, error) {
		if !network {
			t.Error("Available asked for a closed network though [permissions] network is true")
		}
		return sandbox.BackendLandlock, nil
	}})
	if d := open.Spec().Description; !strings.Contains(d, "The network is open") || !strings.Contains(d, "plus GOFLAGS") {
		t.Errorf("open-network description:\n%s", d)
	}
	if d := New(Options{Available: noConfinement}).Spec().Description; !strings.Contains(d, "cannot be confined on this machine") {
		t.Errorf("unconfined description:\n%s", d)
	}
	if s.Name != Name || s.Level != permission.Read || s.Kind != tool.KindExecute || s.ParallelSafe || s.Bookkeeping {
		t.Errorf("confined spec = %+v", s)
	}
	if l := New(Options{Available: noConfinement}).Spec().Level; l != permission.Unrestricted {
		t.Errorf("level without confinement = %v, want unrestricted", l)
	}
	if err := tool.NewRegistry().Add(confined); err != nil {
		t.Errorf("schema: %v", err)
	}
	cmd := "cd sub &&\n  make test\n"
	args, _ := json.Marshal(map[string]any{"command": cmd, "timeout": 5})
	if got := tool.Title(confined, args); got != cmd {
		t.Errorf("Title = %q, want the whole command %q", got, cmd)
	}
}

func TestStdoutStderrSeparated(t *testing.T) {
	ws, _ := dirs(t)
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws)})
	res, text, st := call(t, sh, permission.Unrestricted, ws, map[string]any{
		"command": "echo out; echo err >&2; echo more; exit 3",
	})
	want := "Exit code 3.\n<stdout>\nout\nmore\n</stdout>\n<stderr>\nerr\n</stderr>\n"
	if text != want || res.IsError {
		t.Errorf("result (error %v):\n%s\nwant:\n%s", res.IsError, text, want)
	}
	if st.ExitCode != 3 || st.Stdout.Bytes != 9 || st.Stderr.Bytes != 4 || st.Stdout.Scratch != "" {
		t.Errorf("state = %+v", st)
	}
	_, text, _ = call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "true"})
	if text != "Exit code 0.\n<stdout></stdout>\n<stderr></stderr>\n" {
		t.Errorf("empty result:\n%s", text)
	}
	_, text, st = call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "kill -TERM $$"})
	if !strings.HasPrefix(text, "Terminated by signal SIGTERM.") || st.Signal != "SIGTERM" || st.ExitCode != -1 {
		t.Errorf("signal result: %s (state %+v)", text, st)
	}
}

// TestConfinement: at workspace a command cannot create a file outside the
// roots; at read it cannot create one anywhere but its temp dir.
func TestConfinement(t *testing.T) {
	ws, outside := dirs(t)
	const script = `echo x > "$WS/ws-file"; echo x > "$OUT/out-file"; echo x > "$TMPDIR/tmp-file" && echo tmp-ok`
	env := []string{testPath, "WS=" + ws, "OUT=" + outside, "GITHUB_TOKEN=secret", "DATABASE_URL=postgres://u:pw@h/db"}
	sh := New(Options{Env: env, Roots: rootsOf(t, ws), EnvPassthrough: []string{"WS", "OUT"}})
	if _, err := sandbox.Available(sandbox.Workspace); err != nil {
		if sh.Spec().Level != permission.Unrestricted {
			t.Errorf("level without confinement = %v, want unrestricted", sh.Spec().Level)
		}
		for _, level := range []permission.Level{permission.Read, permission.Workspace} {
			res, text, _ := call(t, sh, level, ws, map[string]any{"command": script})
			if !res.IsError || !strings.Contains(text, "refused") {
				t.Errorf("at %v without confinement: %s", level, text)
			}
		}
		if _, err := os.Stat(ws + "/ws-file"); err == nil {
			t.Error("a refused command ran")
		}
		testenv.Skip(t, "neither Landlock nor bubblewrap can confine on this machine (%v); tested the refusal instead", err)
	}

	_, text, st := call(t, sh, permission.Workspace, ws, map[string]any{"command": script})
	if !exists(ws+"/ws-file") || exists(outside+"/out-file") || !strings.Contains(text, "tmp-ok") {
		t.Errorf("workspace: ws-file %v, out-file %v; result:\n%s", exists(ws+"/ws-file"), exists(outside+"/out-file"), text)
	}
	if st.Sandbox == "" {
		t.Error("workspace call reports no sandbox")
	}
	os.Remove(ws + "/ws-file")

	_, text, _ = call(t, sh, permission.Read, ws, map[string]any{"command": script})
	if exists(ws+"/ws-file") || exists(outside+"/out-file") || !strings.Contains(text, "tmp-ok") {
		t.Errorf("read: ws-file %v, out-file %v; result:\n%s", exists(ws+"/ws-file"), exists(outside+"/out-file"), text)
	}

	_, _, st = call(t, sh, permission.Unrestricted, ws, map[string]any{"command": script})
	if !exists(outside+"/out-file") || st.Sandbox != "" {
		t.Errorf("unrestricted: out-file %v, sandbox %q", exists(outside+"/out-file"), st.Sandbox)
	}

	// The confined environment is the allow-list plus the passthrough; the
	// unrestricted one is the deny-list scrub.
	_, text, _ = call(t, sh, permission.Workspace, ws, map[string]any{"command": "env"})
	if strings.Contains(text, "DATABASE_URL") || strings.Contains(text, "GITHUB_TOKEN") || !strings.Contains(text, "WS=") {
		t.Errorf("workspace env:\n%s", text)
	}
	_, text, _ = call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "env"})
	if !strings.Contains(text, "DATABASE_URL") || strings.Contains(text, "GITHUB_TOKEN") {
		t.Errorf("unrestricted env:\n%s", text)
	}
}

func TestRefusedWithoutConfinement(t *testing.T) {
	ws, _ := dirs(t)
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), Available: noConfinement})
	for _, level := range []permission.Level{permission.Read, permission.Workspace} {
		for _, bg := range []bool{false, true} {
			res, text, _ := call(t, sh, level, ws, map[string]any{"command": "touch ran", "background": bg})
			if !res.IsError || !strings.Contains(text, "refused") || !strings.Contains(text, "unrestricted") {
				t.Errorf("at %v (background %v): %s", level, bg, text)
			}
		}
	}
	if exists(ws + "/ran") {
		t.Fatal("a command ran unconfined while a level was claimed")
	}
	res, _, _ := call(t, sh, permission.None, ws, map[string]any{"command": "touch ran"})
	if !res.IsError || exists(ws+"/ran") {
		t.Error("a command ran at level none")
	}
	call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "touch ran"})
	if !exists(ws + "/ran") {
		t.Error("unrestricted command did not run")
	}
}

func TestEnvScrubbed(t *testing.T) {
	ws, _ := dirs(t)
	secrets := map[string]string{
		"OPENAI_API_KEY": "sk-openai-secret", "GITHUB_TOKEN": "ghp-secret",
		"AWS_SECRET": "aws-secret", "MYPROVIDER_KEY": "profile-named-secret",
	}
	env := []string{testPath, "KEEP=visible"}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	// KEEP passes through at the confined levels, as any variable
	// [permissions] env_passthrough names; a secret named there would too.
	sh := New(Options{Env: env, ScrubNames: []string{"MYPROVIDER_KEY"}, Roots: rootsOf(t, ws), EnvPassthrough: []string{"KE?P"}})
	levels := []permission.Level{permission.Unrestricted}
	if _, err := sandbox.Available(sandbox.Workspace); err == nil {
		levels = append(levels, permission.Workspace)
	}
	for _, level := range levels {
		_, text, _ := call(t, sh, level, ws, map[string]any{"command": "env"})
		if !strings.Contains(text, "KEEP=visible") {
			t.Errorf("at %v the environment lost KEEP:\n%s", level, text)
		}
		for k, v := range secrets {
			if strings.Contains(text, k) || strings.Contains(text, v) {
				t.Errorf("at %v the child saw %s:\n%s", level, k, text)
			}
		}
	}
}

// fakeTimeout hands the test the cancel of each call's timeout context.
type fakeTimeout struct {
	fire chan func()
	d    chan time.Duration
}

func newFakeTimeout() *fakeTimeout {
	return &fakeTimeout{fire: make(chan func(), 1), d: make(chan time.Duration, 1)}
}

func (f *fakeTimeout) with(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(ctx)
	f.d <- d
	f.fire <- cancel
	return c, cancel
}

func TestTimeoutKillsGroup(t *testing.T) {
	levels := []permission.Level{permission.Unrestricted}
	if _, err := sandbox.Available(sandbox.Workspace); err == nil {
		levels = append(levels, permission.Workspace)
	}
	for _, level := range levels {
		t.Run(level.String(), func(t *testing.T) {
			ws, _ := dirs(t)
			// The background sleep holds a FIFO open for writing: its read
			// end sees EOF once the sleep is dead, in whatever PID namespace
			// it ran.
			fifo := ws + "/hold"
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			ft := newFakeTimeout()
			sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), WithTimeout: ft.with})
			type out struct {
				text string
				st   State
				res  tool.Result
			}
			done := make(chan out, 1)
			go func() {
				res, text, st := call(t, sh, level, ws, map[string]any{
					"command": "sleep 100 > hold & sleep 100",
					"timeout": 7,
				})
				done <- out{text, st, res}
			}()
			held, err := os.Open(fifo) // returns once the sleep holds it
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if d := <-ft.d; d != 7*time.Second {
				t.Errorf("timeout = %v, want 7s", d)
			}
			(<-ft.fire)() // the timeout expires
			o := <-done
			if !o.st.TimedOut || !o.res.IsError || !strings.HasPrefix(o.text, "Timed out after 7s") {
				t.Errorf("result: %s (state %+v)", o.text, o.st)
			}
			// ReadAll returns at EOF: every writer, the sleep, is gone.
			if _, err := io.ReadAll(held); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	ws, _ := dirs(t)
	fifo := ws + "/ready"
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan string, 1)
	go func() {
		_, text, _ := callCtx(t, ctx, sh, permission.Unrestricted, ws, map[string]any{"command": "echo partial; echo > ready; sleep 100"}, nil)
		done <- text
	}()
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	cancel()
	text := <-done
	if !strings.HasPrefix(text, "Canceled:") || !strings.Contains(text, "partial") {
		t.Errorf("result:\n%s", text)
	}
}

func TestLiveOutputThroughRun(t *testing.T) {
	ws, _ := dirs(t)
	ticks := make(chan time.Time)
	stopped := make(chan struct{})
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws),
		Ticker: func(d time.Duration) (<-chan time.Time, func()) {
			if d != LiveInterval {
				t.Errorf("ticker interval %v, want %v", d, LiveInterval)
			}
			return ticks, func() { close(stopped) }
		}})
	var chunks []string
	output := func(s string) { chunks = append(chunks, s) }
	// No tick arrives while the command runs: its many writes reach the
	// front door as one chunk, interleaved, before Run returns.
	_, text, _ := callCtx(t, t.Context(), sh, permission.Unrestricted, ws,
		map[string]any{"command": "for i in 1 2 3; do echo out$i; echo err$i >&2; done"}, output)
	if len(chunks) != 1 {
		t.Fatalf("Output called %d times (%q), want once", len(chunks), chunks)
	}
	for _, w := range []string{"out1\n", "out3\n", "err1\n", "err3\n"} {
		if !strings.Contains(chunks[0], w) {
			t.Errorf("live chunk %q lacks %q", chunks[0], w)
		}
	}
	if !strings.Contains(text, "<stdout>\nout1\nout2\nout3\n</stdout>\n<stderr>\nerr1\nerr2\nerr3\n</stderr>") {
		t.Errorf("result keeps the streams apart:\n%s", text)
	}
	select {
	case <-stopped:
	default:
		t.Error("ticker not stopped")
	}
}

func TestBackground(t *testing.T) {
	ws, _ := dirs(t)
	ended := make(chan task.Task, 1)
	reg := task.NewRegistry(task.Options{Dir: t.TempDir(), OnDone: func(tk task.Task) { ended <- tk }})
	t.Cleanup(func() { reg.Close() })
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), Tasks: reg})
	res, text, st := call(t, sh, permission.Unrestricted, ws, map[string]any{
		"command": "echo from-task; echo oops >&2; exit 2", "background": true,
	})
	if res.IsError || st.Task == nil || !strings.Contains(text, "Started background task "+st.Task.ID) {
		t.Fatalf("result: %s (state %+v)", text, st)
	}
	tk := <-ended
	if tk.ID != st.Task.ID || tk.State != task.Exited || tk.ExitCode != 2 || tk.Dir != ws {
		t.Errorf("task = %+v", tk)
	}
	report := task.Report([]task.Task{tk}, 0)
	if !strings.Contains(report, "exited with code 2") || !strings.Contains(report, "from-task\noops\n") {
		t.Errorf("report:\n%s", report)
	}

	if !strings.Contains(string(sh.Spec().Schema), `"background"`) || !strings.Contains(sh.Spec().Description, "background: true") {
		t.Errorf("a session with tasks is not offered background:\n%s", sh.Spec().Schema)
	}
	none := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws)})
	// A session without tasks (a sub-agent's) is not offered what the tool
	// would only refuse.
	if s := none.Spec(); strings.Contains(string(s.Schema), "background") || strings.Contains(s.Description, "background: true") {
		t.Errorf("a session without tasks is offered background:\n%s\n%s", s.Schema, s.Description)
	}
	if err := tool.NewRegistry().Add(none); err != nil {
		t.Errorf("schema: %v", err)
	}
	if res, _, _ := call(t, none, permission.Unrestricted, ws, map[string]any{"command": "true", "background": true}); !res.IsError {
		t.Error("background without a registry succeeded")
	}
}

func TestLargeOutput(t *testing.T) {
	ws, _ := dirs(t)
	scratch := t.TempDir()
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), ScratchDir: scratch, HeadBytes: 1024})

	_, text, st := call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "seq 1 5000"})
	whole, err := os.ReadFile(st.Stdout.Scratch)
	if err != nil {
		t.Fatalf("scratch file: %v\n%s", err, text)
	}
	var want strings.Builder
	for i := 1; i <= 5000; i++ {
		want.WriteString(strconv.Itoa(i) + "\n")
	}
	if string(whole) != want.String() || st.Stdout.Bytes != int64(want.Len()) {
		t.Errorf("scratch holds %d bytes, want %d", len(whole), want.Len())
	}
	if filepath.Dir(st.Stdout.Scratch) != scratch || !strings.Contains(text, "The whole stdout is in the scratchpad file "+st.Stdout.Scratch) {
		t.Errorf("result:\n%s", text)
	}
	head, _, _ := strings.Cut(strings.TrimPrefix(text, "Exit code 0.\n<stdout>\n"), "</stdout>")
	if len(head) > 1024 || !strings.HasPrefix(want.String(), head) || !strings.HasSuffix(head, "\n") {
		t.Errorf("head is %d bytes, not a line-cut prefix within 1024", len(head))
	}

	// Two streams under the memory limit whose sum is over the budget:
	// stderr keeps its half and the whole of it still goes to the scratchpad.
	_, text, st = call(t, sh, permission.Unrestricted, ws, map[string]any{"command": "seq 1 200; seq 1 200 >&2"})
	if st.Stderr.Scratch == "" || st.Stdout.Scratch == "" {
		t.Fatalf("state %+v; result:\n%s", st, text)
	}
	if b, _ := os.ReadFile(st.Stderr.Scratch); int64(len(b)) != st.Stderr.Bytes {
		t.Errorf("stderr scratch holds %d of %d bytes", len(b), st.Stderr.Bytes)
	}

	small := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), ScratchDir: scratch, HeadBytes: 64, MaxSpill: 100})
	_, text, _ = call(t, small, permission.Unrestricted, ws, map[string]any{"command": "seq 1 1000"})
	if !strings.Contains(text, "holds its first 100 B") {
		t.Errorf("capped spill:\n%s", text)
	}
	noScratch := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), HeadBytes: 64})
	_, text, _ = call(t, noScratch, permission.Unrestricted, ws, map[string]any{"command": "seq 1 1000"})
	if !strings.Contains(text, "the rest was not kept: this session has no scratchpad") {
		t.Errorf("no scratchpad:\n%s", text)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// A running command is noted in RunningDir, its token in its environment,
// and the note is gone once the call returns.
func TestRunningNoted(t *testing.T) {
	ws, _ := dirs(t)
	running := filepath.Join(t.TempDir(), "running")
	sh := New(Options{Env: []string{testPath}, Roots: rootsOf(t, ws), RunningDir: running})
	_, text, st := call(t, sh, permission.Unrestricted, ws, map[string]any{
		"command": `ls "` + running + `"; echo "token $` + sandbox.RunVar + `"`,
	})
	if st.ExitCode != 0 {
		t.Fatalf("exit %d:\n%s", st.ExitCode, text)
	}
	out := text[strings.Index(text, "<stdout>\n")+len("<stdout>\n") : strings.Index(text, "</stdout>")]
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || lines[0] != "run-"+strings.TrimPrefix(lines[1], "token ") || lines[1] == "token " {
		t.Errorf("while running, the note and the token were:\n%s", out)
	}
	if notes, err := os.ReadDir(running); err != nil || len(notes) != 0 {
		t.Errorf("after the call, %s holds %d notes (%v)", running, len(notes), err)
	}
}
