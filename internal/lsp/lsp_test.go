package lsp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/testenv"
)

var fake struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// fakeServer builds testdata/fakels once per test binary.
func fakeServer(t testing.TB) string {
	t.Helper()
	fake.once.Do(func() {
		dir, err := os.MkdirTemp("", "meka-fakels-")
		if err != nil {
			fake.err = err
			return
		}
		fake.path = filepath.Join(dir, "fakels")
		if runtime.GOOS == "windows" {
			fake.path += ".exe"
		}
		cmd := exec.Command("go", "build", "-o", fake.path, "./testdata/fakels")
		fake.out, fake.err = cmd.CombinedOutput()
	})
	if fake.err != nil {
		t.Fatalf("build fakels: %v\n%s", fake.err, fake.out)
	}
	return fake.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fake.path != "" {
		os.RemoveAll(filepath.Dir(fake.path))
	}
	os.Exit(code)
}

// newManager returns a Manager whose go server is fakels in mode, closed
// with the test.
func newManager(t *testing.T, mode string, wait time.Duration) *lsp.Manager {
	t.Helper()
	m := lsp.New(lsp.Options{
		Servers: map[string][]string{"go": {fakeServer(t), mode}},
		Wait:    wait,
		Env:     os.Environ(),
	})
	t.Cleanup(func() { m.Close() })
	return m
}

func diagnose(t *testing.T, m *lsp.Manager, root, path, content string) lsp.Report {
	t.Helper()
	return m.Diagnose(t.Context(), lsp.Request{Path: path, Root: root, Content: []byte(content), Unconfined: true})
}

func TestDiagnosticsFollowEdits(t *testing.T) {
	m := newManager(t, "echo", time.Minute)
	root := t.TempDir()
	path := filepath.Join(root, "a.go")
	r := diagnose(t, m, root, path, "package a\n// bad\n")
	if !r.Fresh || len(r.Diagnostics) != 1 || r.Diagnostics[0].Line != 2 || r.Diagnostics[0].Column != 4 {
		t.Fatalf("first report = %+v, want one error at 2:4", r)
	}
	if got := r.Format("a.go"); got != "Diagnostics (fakels) in a.go: 1 error.\na.go:2:4: error: bad word (fakels)" {
		t.Errorf("format = %q", got)
	}
	r = diagnose(t, m, root, path, "package a\n// good\n")
	if !r.Fresh || len(r.Diagnostics) != 0 {
		t.Fatalf("after the fix = %+v, want none", r)
	}
	if got := r.Format("a.go"); got != "Diagnostics (fakels): no errors or warnings in a.go." {
		t.Errorf("format = %q", got)
	}
	// The same content again is answered from what the server published.
	if r := diagnose(t, m, root, path, "package a\n// good\n"); !r.Fresh || len(r.Diagnostics) != 0 {
		t.Fatalf("unchanged = %+v", r)
	}
	// One server per workspace and language: a second root starts another.
	other := t.TempDir()
	diagnose(t, m, other, filepath.Join(other, "b.go"), "package b\n")
	if n := m.Running(); n != 2 {
		t.Errorf("running = %d, want 2", n)
	}
	if r := diagnose(t, m, root, filepath.Join(root, "notes.txt"), "bad"); r.Server != "" || r.Format("notes.txt") != "" {
		t.Errorf("a file no server reads: %+v", r)
	}
}

func TestFormatBounds(t *testing.T) {
	r := lsp.Report{Server: "s", Fresh: true}
	for i := range 100 {
		sev := lsp.SeverityWarning
		if i%10 == 0 {
			sev = lsp.SeverityError
		}
		r.Diagnostics = append(r.Diagnostics, lsp.Diagnostic{Line: i + 1, Column: 1, Severity: sev, Message: strings.Repeat("x", 1000)})
	}
	got := r.Format("f.go")
	if len(got) > lsp.MaxTextBytes {
		t.Errorf("%d bytes, over %d", len(got), lsp.MaxTextBytes)
	}
	lines := strings.Split(got, "\n")
	if lines[0] != "Diagnostics (s) in f.go: 10 errors, 90 warnings." || !strings.Contains(lines[1], ": error: ") {
		t.Errorf("head = %q, %q", lines[0], lines[1])
	}
	if !strings.HasPrefix(lines[len(lines)-1], "(") || !strings.HasSuffix(lines[len(lines)-1], " more not shown)") {
		t.Errorf("tail = %q", lines[len(lines)-1])
	}
}

func TestHungServerIsDropped(t *testing.T) {
	m := newManager(t, "hang", time.Second)
	root := t.TempDir()
	path := filepath.Join(root, "a.go")
	// A slow machine may not see even the answer to initialize within
	// the wait, which is not a hang; the edits after it find the hang.
	var r lsp.Report
	for range 30 {
		r = diagnose(t, m, root, path, "package a\n")
		if !strings.Contains(r.Note, "still starting") {
			break
		}
	}
	if r.Fresh || !strings.Contains(r.Notice, "fakels did not answer within 1s and was stopped") ||
		!strings.Contains(r.Format("a.go"), "did not answer") {
		t.Fatalf("report = %+v, want the server dropped with a notice", r)
	}
	if n := m.Running(); n != 0 {
		t.Errorf("running = %d after the drop", n)
	}
	// It stays off: the next edit does not wait on it again.
	if r := diagnose(t, m, root, path, "package a\n\n"); r.Server != "" || r.Notice != "" {
		t.Errorf("after the drop = %+v, want nothing", r)
	}
}

func TestCrashedServerRestartsThenStaysOff(t *testing.T) {
	m := newManager(t, "crash", time.Minute)
	root := t.TempDir()
	path := filepath.Join(root, "a.go")
	for i := range 2 {
		r := diagnose(t, m, root, path, "package a\n")
		if r.Fresh || !strings.Contains(r.Notice, "fakels exited (exit status 3); it is started again at the next edit") {
			t.Fatalf("crash %d: report = %+v", i+1, r)
		}
	}
	r := diagnose(t, m, root, path, "package a\n")
	if !strings.Contains(r.Notice, "3 times now; diagnostics for go files in "+root+" are off until meka restarts") {
		t.Fatalf("third crash: notice %q", r.Notice)
	}
	if r := diagnose(t, m, root, path, "package a\n"); r.Server != "" {
		t.Errorf("after three crashes = %+v, want nothing", r)
	}
}

func TestCanceledCallersDropNothing(t *testing.T) {
	m := newManager(t, "hang", time.Minute)
	root := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := m.Diagnose(ctx, lsp.Request{Path: filepath.Join(root, "a.go"), Root: root, Content: []byte("package a\n"), Unconfined: true})
	if r.Notice != "" || r.Format("a.go") != "" {
		t.Errorf("report = %+v, want nothing for a caller that gave up", r)
	}
	if n := m.Running(); n != 1 {
		t.Errorf("running = %d, want the server kept", n)
	}
}

// goModule writes a Go module with one file, main.go.
func goModule(t testing.TB, src string) (root, path string) {
	t.Helper()
	root = t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(root, "main.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, path
}

func needGopls(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gopls"); err != nil {
		testenv.Skip(t, "gopls is not on PATH (.ci/run installs it with go install)")
	}
}

const (
	broken = "package main\n\nfunc main() {\n\tvar n int = \"five\"\n\t_ = n\n}\n"
	fixed  = "package main\n\nfunc main() {\n\tvar n int = 5\n\t_ = n\n}\n"
)

func TestGoplsTypeErrorAppearsAndClears(t *testing.T) {
	needGopls(t)
	// A long wait: the first load type-checks the standard library on a
	// cold cache, which a busy machine takes its time over.
	m := lsp.New(lsp.Options{Wait: 2 * time.Minute, Env: os.Environ(), CacheDir: t.TempDir()})
	defer m.Close()
	root, path := goModule(t, broken)
	r := m.Diagnose(t.Context(), lsp.Request{Path: path, Root: root, Content: []byte(broken), Unconfined: true})
	if !r.Fresh || r.Server != "gopls" {
		t.Fatalf("report = %+v, want gopls's", r)
	}
	text := r.Format("main.go")
	if len(r.Diagnostics) == 0 || r.Diagnostics[0].Line != 4 || !strings.Contains(text, "main.go:4:") || !strings.Contains(text, "error") {
		t.Fatalf("broken: %s", text)
	}
	if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	r = m.Diagnose(t.Context(), lsp.Request{Path: path, Root: root, Content: []byte(fixed), Unconfined: true})
	if !r.Fresh || len(r.Diagnostics) != 0 {
		t.Fatalf("fixed: %s", r.Format("main.go"))
	}
}
