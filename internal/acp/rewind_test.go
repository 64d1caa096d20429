package acp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
)

// /rewind lists what each turn changed in the files and puts them back
// as after a turn, refusing a file edited outside meka until forced; the
// model is never called.
func TestRewindCommand(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	h := newHarness(t, harnessOptions{fileTools: true, checkpoints: filepath.Join(t.TempDir(), "cp"),
		rounds: `[{"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"note.txt","content":"hi"}}]},{"text":"done"}]`})
	id := h.newSession()
	h.prompt(id, "write a note")
	note := filepath.Join(h.cwd, "note.txt")
	if _, err := os.Stat(note); err != nil {
		t.Fatal(err)
	}
	said := func(text string) string {
		h.take()
		if r := h.prompt(id, text); r.StopReason != "end_turn" {
			t.Fatalf("%s: %+v", text, r)
		}
		var out string
		for _, u := range h.take() {
			if c, ok := u.Update.(ContentChunk); ok {
				out += c.Content.Text
			}
		}
		return out
	}
	if got := said("/rewind"); !strings.Contains(got, "Turn 1: 1 files") || !strings.Contains(got, "added "+note) {
		t.Fatalf("/rewind said %q", got)
	}
	os.WriteFile(note, []byte("mine"), 0o644)
	if got := said("/rewind 0"); !strings.Contains(got, "Refused") || !strings.Contains(got, note) {
		t.Fatalf("/rewind 0 said %q", got)
	}
	if got := said("/rewind 0 force"); !strings.Contains(got, "deleted "+note) {
		t.Fatalf("/rewind 0 force said %q", got)
	}
	if _, err := os.Stat(note); !os.IsNotExist(err) {
		t.Fatalf("note.txt still there: %v", err)
	}
	if h.prov.Remaining() != 0 || len(h.prov.Requests()) != 2 {
		t.Fatalf("/rewind called the model: %d requests", len(h.prov.Requests()))
	}
}
