package fstool

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// diagnoser is a func-field Diagnoser that records what it was asked.
type diagnoser struct {
	serves   func(path string) bool
	diagnose func(req DiagnoseRequest) Diagnosis
	mu       sync.Mutex // guards asked
	asked    []DiagnoseRequest
}

func (d *diagnoser) Serves(path string) bool { return d.serves(path) }

func (d *diagnoser) Diagnose(_ context.Context, req DiagnoseRequest) Diagnosis {
	d.mu.Lock()
	d.asked = append(d.asked, req)
	d.mu.Unlock()
	return d.diagnose(req)
}

func goFiles(p string) bool { return strings.HasSuffix(p, ".go") }

func TestChangesCarryDiagnostics(t *testing.T) {
	cwd := tempDir(t)
	d := &diagnoser{serves: goFiles, diagnose: func(req DiagnoseRequest) Diagnosis {
		if strings.Contains(string(req.Content), "bad") {
			return Diagnosis{Text: "Diagnostics (fake) in " + req.Display + ": 1 error.", Notice: "told"}
		}
		return Diagnosis{Text: "Diagnostics (fake): no errors or warnings in " + req.Display + "."}
	}}
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, nil, nil), Diagnostics: d})

	r := h.ok("file_write", M{"path": "a.go", "content": "package a // bad\n"})
	if text(r) != "Created a.go (1 lines).\n\nDiagnostics (fake) in a.go: 1 error." || r.Notice != "told" {
		t.Fatalf("write: %q, notice %q", text(r), r.Notice)
	}
	if got := d.asked[0]; got.Path != filepath.Join(cwd, "a.go") || got.Root != cwd || got.Display != "a.go" {
		t.Errorf("asked %+v", got)
	}
	r = h.ok("file_edit", M{"path": "a.go", "old": "bad", "new": "good"})
	if !strings.HasSuffix(text(r), "\n\nDiagnostics (fake): no errors or warnings in a.go.") || r.Notice != "" {
		t.Fatalf("edit: %q", text(r))
	}
	if got := string(d.asked[1].Content); got != "package a // good\n" {
		t.Errorf("edit sent %q, want the new content", got)
	}
	// A file no server reads is not asked about.
	r = h.ok("file_write", M{"path": "notes.txt", "content": "bad\n"})
	if text(r) != "Created notes.txt (1 lines)." || len(d.asked) != 2 {
		t.Fatalf("txt: %q after %d asks", text(r), len(d.asked))
	}

	r = h.ok("diagnostics", M{"path": "a.go"})
	if text(r) != "Diagnostics (fake): no errors or warnings in a.go." {
		t.Fatalf("diagnostics: %q", text(r))
	}
	if msg := h.run("diagnostics", M{"path": "notes.txt"}); !msg.IsError || !strings.Contains(text(msg), "no language server reads notes.txt") {
		t.Fatalf("diagnostics of a txt: %q", text(msg))
	}
	if msg := h.run("diagnostics", M{"path": "b.go"}); !msg.IsError || !strings.Contains(text(msg), "b.go does not exist") {
		t.Fatalf("diagnostics of a missing file: %q", text(msg))
	}
}

func TestNoDiagnosticsToolWithoutDiagnoser(t *testing.T) {
	for _, tl := range New(Options{}) {
		if tl.Spec().Name == "diagnostics" {
			t.Fatal("diagnostics offered without a Diagnoser")
		}
	}
}
