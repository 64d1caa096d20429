package repl

import (
	"strings"
	"testing"
)

// instructed is a session whose prompt loaded instruction files.
type instructed struct {
	*fakeSession
	files []string
}

func (s instructed) Instructions() []string { return s.files }

// /status names the instruction files a hosted session's prompt loaded.
func TestStatusNamesInstructions(t *testing.T) {
	lines := strings.Join(statusBlock(instructed{newFake(), []string{"/w/AGENTS.md (12 bytes)"}}), "\n")
	if !strings.Contains(lines, "Instructions: /w/AGENTS.md (12 bytes)") {
		t.Fatalf("status:\n%s", lines)
	}
	if lines := strings.Join(statusBlock(instructed{newFake(), nil}), "\n"); !strings.Contains(lines, "Instructions: no AGENTS.md found") {
		t.Fatalf("status:\n%s", lines)
	}
}
