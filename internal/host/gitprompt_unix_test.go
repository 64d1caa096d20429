//go:build unix

package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/prompt"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// Opening a session does not wait for git: the prompt is built meanwhile,
// and the first turn waits for it, sends it and records it before the
// user's message, git state included. The fake git answers only once the
// session is open; a host that asked git while opening would time out on
// it and describe no branch.
func TestGitOffTheOpeningPath(t *testing.T) {
	f := newFixture(t, `[{"text":"1"}]`)
	cwd := canonDir(t)
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	fifo := filepath.Join(bin, "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Each git command waits for a line on the fifo.
	writeFile(t, filepath.Join(bin, "git"), "#!/bin/sh\nread x < "+fifo+"\ncase \"$*\" in\n*status*) echo '## fakebranch...origin/fakebranch'; echo ' M a.go';;\n*log*) echo 'the last subject';;\nesac\n")
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.opts.Prompt.Git = prompt.GitOptions{Path: filepath.Join(bin, "git"), Timeout: time.Minute}
	h := f.host(t)
	opened := make(chan *host.Session, 1)
	go func() {
		s, err := h.Create(context.Background(), host.CreateOptions{Cwd: cwd})
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	var s *host.Session
	select {
	case s = <-opened:
	case <-t.Context().Done():
		t.Fatal("opening the session waited for git")
	}
	if s == nil {
		t.FailNow()
	}
	if rows := promptRows(s.Engine().Rows()); len(rows) != 0 {
		t.Fatalf("a prompt was recorded before git answered: %+v", rows)
	}
	// O_RDWR: opening never blocks, and the lines wait in the pipe for
	// both commands however late they read.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.WriteString("go\ngo\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	sys := f.prov.Requests()[0].System
	if !strings.Contains(sys, "Git repository: yes, branch fakebranch\n") || !strings.Contains(sys, " M a.go") || !strings.Contains(sys, "the last subject") {
		t.Fatalf("the request lacks the git state:\n%s", sys)
	}
	rows := s.Engine().Rows()
	if sp, ok := rows[0].Entry.(session.SystemPrompt); !ok || sp.Text != sys {
		t.Fatalf("the first row is not the prompt sent: %+v", rows[0])
	}
	if _, ok := rows[1].Entry.(session.UserMessage); !ok {
		t.Fatalf("the prompt is not recorded before the message: %+v", rows[1])
	}
	if s.SystemPrompt() != sys {
		t.Fatal("SystemPrompt differs from what was sent")
	}
}

// A skill invoked as /name is carried into a compaction's summary once:
// the engine keeps its body verbatim, and the host does not add it again.
