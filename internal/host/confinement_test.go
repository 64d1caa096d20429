package host_test

import (
	"testing"

	"meka.dev/meka/internal/host"
)

// The confinement probe starts processes; nothing runs it before /status
// asks, so a front door answers its first request without waiting on it.
func TestConfinementIsAskedLazily(t *testing.T) {
	f := newFixture(t, `[]`)
	calls := 0
	f.opts.Confinement = func() string { calls++; return "landlock" }
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("the probe ran %d times before anyone asked", calls)
	}
	if got := s.Confinement(); got != "landlock" || calls != 1 {
		t.Fatalf("Confinement() = %q after %d calls", got, calls)
	}
	f.opts.Confinement = nil
	if got := newSession(t, f).Confinement(); got != "" {
		t.Fatalf("no probe: %q", got)
	}
}

func newSession(t *testing.T, f *fixture) *host.Session {
	t.Helper()
	s, err := f.host(t).Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
