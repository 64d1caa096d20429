package repl

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// The built binary on a real pty, mirrored into a virtual terminal; waits
// wake on each chunk of output.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func mekaBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds meka")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meka-screen-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "meka")
		out, err := exec.Command("go", "build", "-o", binPath, "meka.dev/meka/cmd/meka").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build meka: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// session is meka running on a pty.
type ptySession struct {
	t    *testing.T
	term *vterm
	ptmx *os.File
	cmd  *exec.Cmd
	done chan struct{}
}

// startMeka runs meka with args in dir against rounds served over the
// OpenAI wire format, with extra config appended.
func startMeka(t *testing.T, rounds, extra string, args ...string) (*ptySession, *modeltest.Server, string) {
	t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	body := fmt.Sprintf("[profiles.test]\nprovider = \"openai\"\nbase_url = %q\napi_key_env = \"TEST_KEY\"\nmodel = \"m\"\n\n%s", srv.URL+"/v1", extra)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "NO_COLOR=1",
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "MEKA_DATA_DIR=" + filepath.Join(home, "data"),
		"MEKA_CONFIG=" + cfg, "TEST_KEY=k"}
	work := t.TempDir()
	return runPty(t, work, env, args...), srv, work
}

func runPty(t *testing.T, dir string, env []string, args ...string) *ptySession {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptySession{t: t, term: newVterm(t, 80, 24, false), ptmx: ptmx, cmd: cmd, done: make(chan struct{})}
	go io.Copy(ptmx, p.term.emu) // the terminal's answers to queries
	go func() {
		defer close(p.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				p.term.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		ptmx.Close()
	})
	return p
}

func (p *ptySession) keys(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.ptmx, s); err != nil {
		p.t.Fatal(err)
	}
}

func (p *ptySession) wait(s string) { p.t.Helper(); p.term.waitText(p.t, s) }

// quit clears the composer's line and presses Ctrl+C twice, and returns its exit status and
// what the terminal shows.
func (p *ptySession) quit() (int, string) {
	p.t.Helper()
	// Ctrl+C interrupts a turn still running (its reply may be on screen
	// before it ends), and arms quitting only once the screen is idle.
	p.term.waitText(p.t, "shift+tab level")
	p.keys("\x15\x03") // an empty line, then Ctrl+C arms quitting
	p.term.waitText(p.t, "ctrl+c again to quit")
	p.keys("\x03")
	err := p.cmd.Wait()
	<-p.done
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return code, p.term.all()
}

func inOrder(t *testing.T, text string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", w, text)
		}
		at += i + len(w)
	}
}

// A checklist turn: the list is drawn, each nudge is a stage direction
// between the replies, the cap's warning follows; quitting prints how to
// resume and exits 0.
func TestE2EChecklistNudges(t *testing.T) {
	p, srv, _ := startMeka(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["write the parser","test the parser"]}}]},
	 {"text":"All done."},{"text":"Done, really."},{"text":"Still done."},{"text":"Done."}]`, "")
	p.wait("shift+tab level")
	p.keys("build a parser\r")
	p.wait("nudges in a row")
	code, all := p.quit()
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	inOrder(t, all, "> build a parser", "Checklist  □ write the parser", "All done.",
		"(Checklist: 2 open items, continuing, nudge 1 of 3)", "Done, really.", "nudge 2 of 3", "Still done.", "nudge 3 of 3", "Done.",
		"(! Checklist: turn ended with 2 open items", "Resume this session with: meka -r ")
	if n := len(srv.Requests()); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

// An approval: keys typed as the pane opens are ignored; once armed, the
// answer runs the call and is said as one line; the draft is untouched.
func TestE2EApproval(t *testing.T) {
	p, _, work := startMeka(t, `[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"notes.txt","content":"hello\n"}}]},
	 {"text":"Wrote it."}]`, "[permissions]\ndefault = \"read\"\napprovals = true\n")
	p.wait("read · test")
	p.keys("write notes\r")
	p.wait("Always allow any file_write")
	p.keys("d") // in flight as the pane opened: ignored
	p.term.waitFor(t, "the pane to arm", func(s string) bool {
		return strings.Contains(s, "Always allow any file_write") && !strings.Contains(s, "keys armed in")
	})
	p.keys("a")
	p.wait("Wrote it.")
	_, all := p.quit()
	inOrder(t, all, "> write notes", "(file_write allowed)", "Wrote it.")
	if strings.Contains(all, "denied") {
		t.Error("the key typed during the grace answered the pane")
	}
	if b, err := os.ReadFile(filepath.Join(work, "notes.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("notes.txt: %q %v", b, err)
	}
}

// An interrupt: Esc stops a running command, and the steer the turn never
// took comes back into the composer.
func TestE2EInterruptHandsBackText(t *testing.T) {
	p, _, _ := startMeka(t, `[
	 {"tool_calls":[{"id":"s","name":"shell_execute","arguments":{"command":"sleep 30"}}]},
	 {"text":"never"}]`, "", "--permission", "unrestricted")
	p.wait("unrestricted · test")
	p.keys("wait for it\r")
	p.wait("◐ sleep 30")
	p.keys("also check the logs\r")
	p.wait("steer (goes with the next tool results): also check the logs")
	p.keys("\x1b")
	p.wait("(interrupted)")
	p.term.waitFor(t, "the steer back in the composer", func(s string) bool {
		return strings.Contains(p.term.emu.String(), "> also check the logs")
	})
	_, all := p.quit()
	inOrder(t, all, "> wait for it", "✗ sleep 30", "(interrupted)")
	if strings.Contains(all, "never") {
		t.Error("the turn went on after the interrupt")
	}
}

// A job the agent scheduled fires at an idle prompt: it runs like a typed
// turn, and the half-typed draft comes back afterwards.
func TestE2EScheduledJobRestoresDraft(t *testing.T) {
	p, _, _ := startMeka(t, `[
	 {"tool_calls":[{"id":"c","name":"schedule_create","arguments":{"in":"1s","prompt":"check the deploy"}}]},
	 {"text":"I'll check it in a second."},
	 {"text":"Deploy is green."}]`, "[schedule]\npoll_interval = \"1s\"\n")
	p.wait("shift+tab level")
	p.keys("remind me\r")
	p.wait("I'll check it in a second.")
	p.keys("half typed")
	p.wait("Deploy is green.")
	p.term.waitFor(t, "the draft handed back", func(string) bool {
		return strings.Contains(p.term.emu.String(), "> half typed")
	})
	code, all := p.quit()
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	inOrder(t, all, "> remind me", "Created job", "I'll check it in a second.", "(Scheduled job", "> check the deploy", "Deploy is green.")
}

// `meka -c` prints the session's recent history before the prompt.
func TestE2EContinuePrintsHistory(t *testing.T) {
	p, _, work := startMeka(t, `[{"text":"First answer."}]`, "")
	p.wait("shift+tab level")
	p.keys("first question\r")
	p.wait("First answer.")
	p.quit()
	env := p.cmd.Env
	q := runPty(t, work, env, "-c")
	q.wait("shift+tab level")
	inOrder(t, q.term.all(), "> first question", "First answer.")
	q.quit()
}

// Line mode: with stdin not a terminal, each line is a turn, every turn
// is printed, and the session's id is said at the end.
func TestE2EPlainMode(t *testing.T) {
	mekaBinary(t)
	s, err := script.Parse([]byte(`{"rounds":[{"text":"One."},{"text":"Two."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), binPath)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MEKA_DATA_DIR=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + srv.URL + "/v1"}
	cmd.Stdin = strings.NewReader("first\nsecond\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	inOrder(t, out.String(), "> first", "One.", "> second", "Two.")
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("escape codes in line mode: %q", out.String())
	}
	if !strings.Contains(errOut.String(), "meka -r ") {
		t.Errorf("stderr %q", errOut.String())
	}
}

// `meka "prompt"` opens the screen with that first message.
func TestE2EFirstPrompt(t *testing.T) {
	p, _, _ := startMeka(t, `[{"text":"Hi there."}]`, "", "say hi")
	p.wait("Hi there.")
	_, all := p.quit()
	inOrder(t, all, "> say hi", "Hi there.", "Resume this session with: meka -r ")
}

// /fork continues in a copy; quitting names the copy. /cd moves the
// session to another directory, recorded canonically.
func TestE2EForkAndCd(t *testing.T) {
	p, _, work := startMeka(t, `[{"text":"First answer."}]`, "")
	p.wait("shift+tab level")
	p.keys("first question\r")
	p.wait("First answer.")
	p.keys("/status\r")
	p.wait("(answered here; no model call)")
	sub := filepath.Join(work, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p.keys("/cd sub\r")
	p.wait("sub, profile test)")
	p.keys("/fork\r")
	p.term.waitFor(t, "the fork", func(s string) bool { return strings.Count(s, ", profile test)") == 2 })
	_, all := p.quit()
	ids := regexpSession.FindAllStringSubmatch(all, -1)
	if len(ids) != 2 || ids[0][1] == ids[1][1] {
		t.Fatalf("sessions said %q in:\n%s", ids, all)
	}
	if !strings.Contains(all, "Resume this session with: meka -r "+ids[1][1]) {
		t.Errorf("quitting does not name the fork %s:\n%s", ids[1][1], all)
	}
}

var regexpSession = regexp.MustCompile(`session ([0-9a-f]{8}) in `)

// SIGTERM ends the screen like Ctrl+C ends a turn: exit 143, the session
// released.
func TestE2ESigterm(t *testing.T) {
	p, _, _ := startMeka(t, `[{"text":"x"}]`, "")
	p.wait("shift+tab level")
	p.cmd.Process.Signal(syscall.SIGTERM)
	err := p.cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 143 {
		t.Fatalf("exit: %v", err)
	}
}

// A resumed session shows the list its log adds up to, pinned, before
// any change; /plan prints every item.
func TestE2EResumeShowsPlan(t *testing.T) {
	p, _, work := startMeka(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["write the parser","test the parser"]}}]},
	 {"text":"Started."},{"text":"s"},{"text":"s"},{"text":"s"}]`, "")
	p.wait("shift+tab level")
	p.keys("build a parser\r")
	p.wait("nudges in a row")
	p.quit()
	q := runPty(t, work, p.cmd.Env, "-c")
	q.term.waitFor(t, "the pinned list", func(string) bool {
		return strings.Contains(q.term.emu.String(), "Checklist  □ write the parser")
	})
	q.keys("/plan\r")
	q.wait("0 of 2 done")
	q.quit()
}
