//go:build linux

package sandbox

import (
	"os"
	"testing"
)

// An atomic write's temporary file is noted in the journal while it
// exists, and the note goes when the write is done.
func TestNoteTempJournals(t *testing.T) {
	dir := canonTemp(t) + "/journal"
	r := (&Roots{}).Journal(dir)
	done := r.noteTemp("/ws/.meka-tmp-1")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("journal holds %v, %v; want one note", entries, err)
	}
	if b, _ := os.ReadFile(dir + "/" + entries[0].Name()); string(b) != "/ws/.meka-tmp-1" {
		t.Errorf("note %q", b)
	}
	done()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("journal after done: %v", entries)
	}
}
