package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// TestStartBuildsInTheBackground: Start returns with the session stored
// and locked while its engine is still being built; an Open of it waits
// for the build and shares the session Wait returns.
func TestStartBuildsInTheBackground(t *testing.T) {
	f := newFixture(t, `[{"text":"hello"}]`)
	release := make(chan struct{})
	f.opts.Tools = func(host.Env) ([]tool.Tool, error) { <-release; return []tool.Tool{f.tool}, nil }
	h := f.host(t)
	p, err := h.Start(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	id := p.Meta().ID
	stored, err := f.db.Sessions().Get(t.Context(), id)
	if err != nil || stored.Permission != "read" || p.Level().String() != "read" {
		close(release)
		t.Fatalf("stored %+v err %v level %s", stored, err, p.Level())
	}
	if _, err := f.db.Sessions().Lock(t.Context(), id, session.Holder{Token: "another"}); !errors.Is(err, session.ErrHeld) {
		close(release)
		t.Fatalf("the session's lock while it builds: %v", err)
	}
	opened := make(chan *host.Session, 1)
	go func() {
		s, err := h.Open(context.Background(), id)
		if err != nil {
			t.Error(err)
		}
		opened <- s
	}()
	close(release)
	s, err := p.Wait(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if o := <-opened; o != s {
		t.Fatalf("Open during the build gave %p, the build %p", o, s)
	}
	if res, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil || res.Reply != "hello" {
		t.Fatalf("prompt: %+v %v", res, err)
	}
}

// TestStartFailedBuild: a build that fails is Wait's error; the session
// stays stored, its lock released.
func TestStartFailedBuild(t *testing.T) {
	f := newFixture(t, `[]`)
	f.opts.Tools = func(host.Env) ([]tool.Tool, error) { return nil, errors.New("no tools today") }
	h := f.host(t)
	p, err := h.Start(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "no tools today") {
		t.Fatalf("wait: %v", err)
	}
	if _, ok := h.Get(p.Meta().ID); ok {
		t.Fatal("a failed build left the session open")
	}
	if _, err := f.db.Sessions().Lock(t.Context(), p.Meta().ID, session.Holder{Token: "another"}); err != nil {
		t.Fatalf("the lock after a failed build: %v", err)
	}
}
