package schedule_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
)

// schedule_create's isolation "worktree" is checked against the session's
// workspace, recorded on the job's row, and handed to the host with each
// of its turns. The sweep reads the job from the database, so a host
// started afresh (a restart) fires it in a worktree too.
func TestCreateIsolatedJob(t *testing.T) {
	var checked []string
	e := newEnv(t, func(o *schedule.Options) {
		o.Isolation = func(_ context.Context, cwd string) error {
			checked = append(checked, cwd)
			return nil
		}
	})
	sid := e.session(permission.Workspace)
	res := e.call(schedule.CreateToolName, sid, permission.Workspace, `{"prompt": "nightly upgrade", "in": "5m", "isolation": "worktree"}`)
	if res.IsError || !strings.Contains(text(res), "fresh git worktree") {
		t.Fatalf("create: %q", text(res))
	}
	if len(checked) != 1 || checked[0] != e.cwd {
		t.Fatalf("isolation checked for %q, want the session's workspace %s", checked, e.cwd)
	}
	jobs, err := e.store.List(t.Context(), sid)
	if err != nil || len(jobs) != 1 || jobs[0].Isolation != schedule.IsolationWorktree {
		t.Fatalf("stored jobs %+v, %v", jobs, err)
	}
	plain := e.create(sid, permission.Workspace, `{"prompt": "plain", "in": "5m"}`)
	if j, _ := e.job(plain); j.Isolation != "" {
		t.Fatalf("a job without isolation recorded %q", j.Isolation)
	}
	e.sweep(t0.Add(6 * time.Minute))
	e.firer.mu.Lock()
	fired := append([]fired(nil), e.firer.fired...)
	e.firer.mu.Unlock()
	if len(fired) != 2 {
		t.Fatalf("fired %d turns, want 2", len(fired))
	}
	for _, f := range fired {
		want := ""
		if strings.Contains(f.Text(), "nightly upgrade") {
			want = schedule.IsolationWorktree
		}
		if f.Isolation != want {
			t.Errorf("turn %q fired with isolation %q, want %q", f.Text(), f.Isolation, want)
		}
	}
}

// Isolation is refused where no worktree can be made, saying why, and
// where the host makes none; nothing is stored.
func TestCreateIsolatedJobRefused(t *testing.T) {
	for _, c := range []struct {
		check func(context.Context, string) error
		want  string
	}{
		{nil, "not available here"},
		{func(_ context.Context, cwd string) error {
			return errors.New("worktree: " + cwd + " is not in a git repository")
		}, "needs a git repository with a commit: worktree: "},
	} {
		e := newEnv(t, func(o *schedule.Options) { o.Isolation = c.check })
		sid := e.session(permission.Workspace)
		res := e.call(schedule.CreateToolName, sid, permission.Workspace, `{"prompt": "p", "in": "5m", "isolation": "worktree"}`)
		if !res.IsError || !strings.Contains(text(res), c.want) || !strings.Contains(text(res), "Leave isolation out") && c.check != nil {
			t.Errorf("got %q, want a refusal containing %q", text(res), c.want)
		}
		if jobs, _ := e.store.List(t.Context(), sid); len(jobs) != 0 {
			t.Errorf("a refused job was stored: %+v", jobs)
		}
	}
}
