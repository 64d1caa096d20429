package schedule_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

func TestMissedRecurringFiresOnceSaying720(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "tick", "every": "30s"}`)

	// The host was down for six hours: 720 occurrences at 30 s.
	down := t0.Add(6 * time.Hour)
	res := e.sweep(down)
	if res.Fired != 1 {
		t.Fatalf("sweep after 6h: %+v", res)
	}
	f := e.firer.take()
	if len(f) != 1 {
		t.Fatalf("%d turns", len(f))
	}
	if !strings.Contains(f[0].Text(), "This one turn stands in for 720 occurrences missed since 2026-08-11 15:02 CEST") {
		t.Errorf("turn:\n%s", f[0].Text())
	}
	if !f[0].Withdraw {
		t.Error("a recurring job's turn does not ask for its prompt to be withdrawn on failure")
	}
	// Rescheduled from now: no burst.
	j, _ := e.job(id)
	if !j.NextAt.Equal(down.Add(30*time.Second)) || !j.LastFiredAt.Equal(down) || j.FailedClaims != 0 || j.LeaseOwner != "" {
		t.Errorf("after the catch-up: %+v", j)
	}
	if res := e.sweep(down.Add(29 * time.Second)); res.Due != 0 || len(e.firer.take()) != 0 {
		t.Errorf("burst after catch-up: %+v", res)
	}
}

func TestMissedCron(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "tick", "cron": "*/5 * * * *"}`) // next 15:05 CEST
	e.sweep(time.Date(2026, 8, 11, 14, 7, 0, 0, time.UTC))                            // 16:07 CEST: 15:05 … 16:05
	f := e.firer.take()
	if len(f) != 1 || !strings.Contains(f[0].Text(), "stands in for 13 occurrences") {
		t.Fatalf("turns %v", f)
	}
	j, _ := e.job(id)
	if want := time.Date(2026, 8, 11, 14, 10, 0, 0, time.UTC); !j.NextAt.Equal(want) {
		t.Errorf("next %v, want %v", j.NextAt, want)
	}
}

func TestOnTimeKeepsCadence(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "tick", "every": "1m"}`)
	e.sweep(t0.Add(time.Minute + 7*time.Second)) // a poll tick late
	f := e.firer.take()
	if len(f) != 1 || strings.Contains(f[0].Text(), "stands in") || strings.Contains(f[0].Text(), "late") {
		t.Fatalf("turns %v", f)
	}
	if j, _ := e.job(id); !j.NextAt.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("next %v, want the cadence kept at %v", j.NextAt, t0.Add(2*time.Minute))
	}
}

func TestOneShotMissedGrace(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	late := e.create(sid, permission.Read, `{"prompt": "join standup", "in": "1h"}`)
	e.create(sid, permission.Read, `{"prompt": "still relevant", "in": "3h"}`)

	var fired []schedule.Fired
	e.sched.OnFired(func(f schedule.Fired) { fired = append(fired, f) })
	// Back after 25h: the first is past missed_grace (24h) and dropped,
	// the second 23h late and fired, told so.
	now := t0.Add(26 * time.Hour)
	res := e.sweep(now)
	// Whoever watches (meka serve's schedule.fired) hears of both.
	if len(fired) != 2 || fired[0].Status != "dropped" || fired[0].JobID != late || fired[1].Status != "completed" || fired[1].LateBy != 23*time.Hour {
		t.Errorf("fired reports: %+v", fired)
	}
	if res.Dropped != 1 || res.Fired != 1 {
		t.Fatalf("sweep: %+v\n%s", res, e.log)
	}
	if _, ok := e.job(late); ok {
		t.Error("dropped one-shot still stored")
	}
	if !strings.Contains(e.log.String(), "one-shot job dropped: it is past missed_grace") || !strings.Contains(e.log.String(), "job="+schedule.ShortID(late)) {
		t.Errorf("no warning for the dropped job:\n%s", e.log)
	}
	f := e.firer.take()
	if len(f) != 1 || !strings.HasPrefix(f[0].Text(), "still relevant") || !strings.Contains(f[0].Text(), "It is 23h late") {
		t.Fatalf("turns %v", f)
	}
	if f[0].Withdraw {
		t.Error("a one-shot's prompt would be withdrawn")
	}
	if jobs, _ := e.store.List(t.Context(), sid); len(jobs) != 0 {
		t.Errorf("jobs left: %v", jobs)
	}
}

func TestMaxConsecutiveFiresAcrossSessions(t *testing.T) {
	e := newEnv(t, nil) // max_consecutive_fires = 5
	a := e.session(permission.Read)
	b := e.session(permission.Read)
	calls := map[string]*atomic.Int32{}
	// Eight of a's jobs and two of b's, all due, a's most overdue first.
	// Each is gated by a tool that counts its calls, to show that a job
	// held over runs no gate.
	var ids []string
	for i := range 10 {
		sid := a
		if i >= 8 {
			sid = b
		}
		name := fmt.Sprintf("probe%d", i)
		n := &atomic.Int32{}
		calls[name] = n
		p := &fakeTool{name: name}
		p.set(func(context.Context, tool.Call) (tool.Result, error) { n.Add(1); return tool.Text(name), nil })
		e.firer.addTool(p, permission.Read)
		j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0.Add(time.Duration(i) * time.Minute),
			Level: "read", Gate: fmt.Sprintf(`{"check":{"tool":%q},"when":"changed"}`, name), Prompt: fmt.Sprintf("job %d", i)})
		ids = append(ids, j.ID)
	}
	now := t0.Add(time.Hour)
	res := e.sweep(now)
	if res.Fired != 7 || res.HeldOver != 3 {
		t.Fatalf("first sweep: %+v", res)
	}
	var got []string
	for _, f := range e.firer.take() {
		got = append(got, f.Message.Parts[0].(model.Text).Text)
	}
	if want := "[job 0 job 1 job 2 job 3 job 4 job 8 job 9]"; fmt.Sprint(got) != want {
		t.Errorf("fired %v, want %s", got, want)
	}
	for i := range 10 {
		_, stored := e.job(ids[i])
		ran := calls[fmt.Sprintf("probe%d", i)].Load()
		heldOver := i >= 5 && i < 8
		if stored != heldOver || (ran == 0) != heldOver {
			t.Errorf("job %d: stored %v, gate ran %d times; want held over %v", i, stored, ran, heldOver)
		}
	}
	if res := e.sweep(now.Add(10 * time.Second)); res.Fired != 3 || res.HeldOver != 0 {
		t.Fatalf("second sweep: %+v", res)
	}
}
