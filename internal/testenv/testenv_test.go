package testenv_test

import (
	"fmt"
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
