package testenv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
)

// recorder is a testing.TB that records how it was ended.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fatal: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended = "skip: " + fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func skip(ci string, t *testing.T) string {
	t.Setenv(testenv.EnvCI, ci)
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testenv.Skip(r, "no %s here", "git")
		r.ended = "returned"
	}()
	<-done
	return r.ended
}

func TestSkipFailsUnderCI(t *testing.T) {
	if got, want := skip("", t), "skip: no git here"; got != want {
		t.Errorf("outside CI: %q, want %q", got, want)
	}
	if got, want := skip("1", t), "fatal: MEKA_CI is set, so this test may not skip: no git here"; got != want {
		t.Errorf("under CI: %q, want %q", got, want)
	}
}

func TestSeedReplays(t *testing.T) {
	t.Setenv(testenv.EnvSeed, "")
	if a, b := testenv.Seed(t), testenv.Seed(t); a == 0 || b == 0 {
		t.Errorf("fresh seeds %d, %d", a, b)
	}
	t.Setenv(testenv.EnvSeed, "1234567890123")
	if got := testenv.Seed(t); got != 1234567890123 {
		t.Errorf("Seed with %s set = %d", testenv.EnvSeed, got)
	}
	t.Setenv(testenv.EnvSeed, "x")
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); testenv.Seed(r); r.ended = "returned" }()
	<-done
	if !strings.HasPrefix(r.ended, "fatal: MEKA_TEST_SEED=\"x\"") {
		t.Errorf("a bad seed: %q", r.ended)
	}
}

// GitRepo commits its files on main as the fixed author, whatever the
// user's git config says: here a pre-commit hook that refuses.
func TestGitRepoIgnoresUserConfig(t *testing.T) {
	home := t.TempDir()
	hooks := filepath.Join(home, "hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = "+hooks+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)

	dir := testenv.GitRepo(t, map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	if got := testenv.Sh(t, dir, "git log --format='%an %s' && git ls-files && git status --porcelain && git branch --show-current"); got != "t init\na.txt\nb.txt\nmain\n" {
		t.Errorf("repository: %q", got)
	}
	if empty := testenv.GitRepo(t, nil); testenv.Sh(t, empty, "git rev-list --count HEAD") != "1\n" {
		t.Error("no files: want one empty commit")
	}
}
