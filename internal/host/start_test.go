package host_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
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
	a, err := h.Admission().Admit(host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	p, err := h.Start(t.Context(), a)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	id := p.Meta().ID
	stored, err := f.db.Sessions().Get(t.Context(), id)
	if err != nil || id != a.Meta().ID || stored.Permission != "read" || a.Level().String() != "read" {
		close(release)
		t.Fatalf("stored %+v err %v level %s", stored, err, a.Level())
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
	a, err := h.Admission().Admit(host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Start(t.Context(), a)
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

// TestAdmitWithoutAHost: an Admission decides a creation from the
// configuration and the filesystem alone, refusing what Create refuses;
// what it admits gets its id at once, and Start stores it under that id.
func TestAdmitWithoutAHost(t *testing.T) {
	home, _ := host.Canonical(t.TempDir())
	work, _ := host.Canonical(t.TempDir())
	adm := host.Admission{Permissions: host.Permissions{Enabled: []permission.Level{permission.Read, permission.Workspace}, Default: permission.Workspace, Approvals: true},
		Home: home, Profile: func(name string) (string, error) {
			if name == "" {
				return "main", nil
			}
			return "", errors.New("no such profile")
		}}
	unrestricted := permission.Unrestricted
	for _, c := range []struct {
		o    host.CreateOptions
		want error
	}{
		{host.CreateOptions{Cwd: home}, host.ErrWideWorkspace},
		{host.CreateOptions{Cwd: work, Permission: &unrestricted}, host.ErrLevelNotEnabled},
		{host.CreateOptions{Cwd: filepath.Join(work, "missing")}, fs.ErrNotExist},
	} {
		if _, err := adm.Admit(c.o); !errors.Is(err, c.want) {
			t.Errorf("Admit(%+v) = %v, want %v", c.o, err, c.want)
		}
	}
	if _, err := adm.Admit(host.CreateOptions{Cwd: work, Profile: "gone"}); err == nil || !strings.Contains(err.Error(), "no such profile") {
		t.Errorf("Admit with an unknown profile: %v", err)
	}
	a, err := adm.Admit(host.CreateOptions{Cwd: work})
	if err != nil {
		t.Fatal(err)
	}
	m := a.Meta()
	if u, err := uuid.Parse(m.ID); err != nil || u.Version() != 4 || m.Cwd != work || m.Profile != "main" || m.Permission != "workspace" || !m.Approvals || a.Level() != permission.Workspace {
		t.Fatalf("admitted %+v (level %s)", m, a.Level())
	}

	f := newFixture(t, `[]`)
	p, err := f.host(t).Start(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	if stored, err := f.db.Sessions().Get(t.Context(), m.ID); err != nil || p.Meta().ID != m.ID || stored.Cwd != work || stored.Profile != "main" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}
