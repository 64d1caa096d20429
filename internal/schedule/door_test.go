package schedule_test

import (
	"strings"
	"testing"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
)

// A front door's /schedule sees only its session's jobs, and cancels
// only those.
func TestDoorJobsAndCancel(t *testing.T) {
	e := newEnv(t, nil)
	a := e.session(permission.Read)
	b := e.session(permission.Read)
	ja := e.create(a, permission.Read, `{"prompt": "standup", "in": "20m"}`)
	jb := e.create(b, permission.Read, `{"prompt": "other", "in": "20m"}`)

	jobs, err := e.sched.Jobs(t.Context(), a)
	if err != nil || len(jobs) != 1 || jobs[0].ID != ja {
		t.Fatalf("jobs of a: %+v %v", jobs, err)
	}
	if _, err := e.sched.Cancel(t.Context(), a, jb[:8]); err == nil || !strings.Contains(err.Error(), "no job of this session") {
		t.Errorf("cancel of another session's job: %v", err)
	}
	if _, ok := e.job(jb); !ok {
		t.Error("another session's job was cancelled")
	}
	said, err := e.sched.Cancel(t.Context(), a, ja[:6])
	if err != nil || !strings.HasPrefix(said, "Cancelled job "+schedule.ShortID(ja)) {
		t.Fatalf("cancel: %q %v", said, err)
	}
	if _, ok := e.job(ja); ok {
		t.Error("cancelled job still stored")
	}
}
