package repl

import (
	"os/exec"
	"strings"
	"testing"
)

// exitCode waits for meka to end and returns its exit status and all
// the terminal showed.
func (p *ptySession) exitCode() (int, string) {
	p.t.Helper()
	err := p.cmd.Wait()
	<-p.done
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), p.term.all()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return 0, p.term.all()
}

// Habits from other agent CLIs on the real screen: a typo, /clear,
// /status and Shift+Tab never reach the model, and /quit exits 0.
func TestE2ESlashCommandsNeverReachTheModel(t *testing.T) {
	p, srv, _ := startMeka(t, `[{"text":"Only answer."}]`, "")
	p.wait("workspace · test")
	p.keys("hello\r")
	p.wait("Only answer.")
	p.keys("/stauts\r")
	p.wait("did you mean /status?")
	p.keys("/status\r")
	p.wait("(answered here; no model call)")
	if !strings.Contains(p.term.all(), "Session: ") {
		t.Errorf("/status names no session:\n%s", p.term.all())
	}
	p.keys("/clear\r")
	p.wait("resumes it")
	// Shift+Tab: none, read, back to workspace, never unrestricted.
	p.keys("\x1b[Z")
	p.wait("(permission: none)")
	p.keys("\x1b[Z")
	p.wait("(permission: read)")
	p.keys("\x1b[Z")
	p.wait("(permission: workspace)")
	p.keys("\x1b[Z")
	p.term.waitFor(t, "none again", func(s string) bool { return strings.Count(s, "(permission: none)") == 2 })
	p.keys("/quit\r")
	code, all := p.exitCode()
	if code != 0 {
		t.Fatalf("/quit: exit %d\n%s", code, all)
	}
	if strings.Contains(all, "unrestricted") {
		t.Errorf("Shift+Tab reached unrestricted:\n%s", all)
	}
	inOrder(t, all, "> /stauts", "unknown command /stauts (did you mean /status?); nothing was sent", "> /clear", "The previous one is ")
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d model requests, want 1 (the hello)", n)
	}
}

// /exit and Ctrl+D twice on an empty composer quit with status 0, and
// send nothing.
func TestE2EQuitKeys(t *testing.T) {
	for _, tc := range []struct {
		name, keys, armed string
	}{
		{"exit", "/exit\r", ""},
		{"ctrl+d", "\x04", "ctrl+d again to quit"},
		{"ctrl+c", "\x03", "ctrl+c again to quit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, srv, _ := startMeka(t, `[{"text":"never"}]`, "")
			p.wait("shift+tab level")
			p.keys(tc.keys)
			if tc.armed != "" {
				p.wait(tc.armed)
				p.keys(tc.keys)
			}
			if code, all := p.exitCode(); code != 0 {
				t.Fatalf("exit %d\n%s", code, all)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("%d model requests", n)
			}
		})
	}
}

// --permission unrestricted is the ceiling the user asked for: Shift+Tab
// comes back to it.
func TestE2EShiftTabCeilingFromFlag(t *testing.T) {
	p, _, _ := startMeka(t, `[{"text":"never"}]`, "", "--permission", "unrestricted")
	p.wait("unrestricted · test")
	p.keys("\x1b[Z")
	p.wait("(permission: none)")
	p.keys("\x1b[Z\x1b[Z\x1b[Z")
	p.wait("(permission: unrestricted)")
	p.keys("/quit\r")
	if code, all := p.exitCode(); code != 0 {
		t.Fatalf("exit %d\n%s", code, all)
	}
}
