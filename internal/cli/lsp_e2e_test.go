package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/testenv"
)

// [lsp.servers.NAME] takes the names of the languages internal/lsp knows.
func TestLSPLanguagesAgree(t *testing.T) {
	if got := lsp.LanguageNames(); !slices.Equal(config.LSPLanguages, got) {
		t.Errorf("config.LSPLanguages = %q, internal/lsp has %q", config.LSPLanguages, got)
	}
}

// A file_write that leaves a type error in a Go module gets gopls's
// error in its result, and the file_edit that fixes it says there are
// none left: the model reads both.
func TestOneshotEditsCarryDiagnostics(t *testing.T) {
	if _, err := exec.LookPath("gopls"); err != nil {
		testenv.Skip(t, "gopls is not on PATH (.ci/run installs it with go install)")
	}
	srv := serve(t, `[
	 {"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"main.go","content":"package main\n\nfunc main() {\n\tvar n int = \"five\"\n\t_ = n\n}\n"}}]},
	 {"tool_calls":[{"id":"e1","name":"file_edit","arguments":{"path":"main.go","old":"\"five\"","new":"5"}}]},
	 {"text":"Fixed."}]`)
	// A long wait: a cold gopls on a busy machine takes its time.
	env := configured(t, srv, "[lsp]\nwait = \"3m\"\n")
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, work, env, "--oneshot", "--permission", "workspace", "write main.go")
	if code != 0 {
		t.Fatalf("code %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	write, edit := string(reqs[1].Body), string(reqs[2].Body)
	if !strings.Contains(write, `Diagnostics (gopls) in main.go: 1 error.\nmain.go:4:14: error: cannot use`) {
		t.Errorf("the write's result has no type error:\n%s", write)
	}
	if !strings.Contains(edit, `Diagnostics (gopls): no errors or warnings in main.go.`) {
		t.Errorf("the edit's result does not say the error is gone:\n%s", edit)
	}
}
