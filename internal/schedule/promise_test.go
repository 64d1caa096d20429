package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
)

// A command gate runs unconfined, so it needs a job created at the
// unrestricted level: one recorded at any lower level never runs its
// command and never fires, whatever the session's level is now.
func TestCommandGateNeedsAJobCreatedUnrestricted(t *testing.T) {
	for _, tc := range []struct {
		recorded permission.Level
		fires    bool
	}{
		{permission.Read, false},
		{permission.Workspace, false},
		{permission.Unrestricted, true},
	} {
		t.Run(tc.recorded.String(), func(t *testing.T) {
			e := newEnv(t, nil)
			sid := e.session(permission.Unrestricted)
			j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0, Level: tc.recorded.String(),
				Gate: `{"check":{"command":"touch gate-ran"},"when":"succeeded"}`})
			reason := e.sched.NotFiring(j, permission.Unrestricted)
			res := e.sweep(t0)
			_, err := os.Stat(filepath.Join(e.cwd, "gate-ran"))
			ran := err == nil
			if fired := len(e.firer.take()) == 1; fired != tc.fires || ran != tc.fires || res.Fired != boolInt(tc.fires) {
				t.Fatalf("created at %s: fired %v, gate ran %v (%+v); want both %v\n%s", tc.recorded, fired, ran, res, tc.fires, e.log)
			}
			want := ""
			if !tc.fires {
				want = fmt.Sprintf("its command gate needs the unrestricted level and the job was created at the %s level", tc.recorded)
				if res.Withheld != 1 {
					t.Errorf("sweep %+v, want it withheld", res)
				}
			}
			if reason != want {
				t.Errorf("NotFiring = %q, want %q", reason, want)
			}
			if v := schedule.Withheld(j, permission.Unrestricted, nil, true); v.Reason != want || !v.Known {
				t.Errorf("Withheld = %+v, want reason %q", v, want)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A job reached late in a sweep, after earlier turns used up half its
// claim, has its lease renewed before it fires: its turn gets a whole
// lease, and a job canceled meanwhile is not fired.
func TestLateFireInASweepRenewsTheLease(t *testing.T) {
	const turn = 40 * time.Minute // more than half the default hour's lease
	setup := func(t *testing.T) (*env, string, schedule.Job, schedule.Job) {
		e := newEnv(t, nil)
		sid := e.session(permission.Read)
		first := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0.Add(-time.Minute), Prompt: "first"})
		second := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0, Prompt: "second"})
		return e, sid, first, second
	}
	t.Run("renewed", func(t *testing.T) {
		e, _, first, second := setup(t)
		var leaseAtFire time.Time
		e.firer.fire = func(_ context.Context, _ string, f schedule.Firing) (bool, error) {
			switch f.JobID {
			case first.ID:
				e.clock.Add(turn)
			case second.ID:
				j, _ := e.job(second.ID)
				leaseAtFire = j.LeaseUntil
			}
			return true, nil
		}
		if res := e.sweep(t0); res.Fired != 2 {
			t.Fatalf("sweep %+v\n%s", res, e.log)
		}
		if want := t0.Add(turn + schedule.DefaultClaimLease); !leaseAtFire.Equal(want) {
			t.Errorf("the late job fired with its lease until %v, want %v (a whole lease from when it fired)", leaseAtFire, want)
		}
	})
	t.Run("canceled meanwhile", func(t *testing.T) {
		e, sid, first, second := setup(t)
		e.firer.fire = func(_ context.Context, _ string, f schedule.Firing) (bool, error) {
			if f.JobID == first.ID {
				e.clock.Add(turn)
				if res := e.call(schedule.CancelToolName, sid, permission.Read, fmt.Sprintf(`{"id": %q}`, second.ID)); res.IsError {
					t.Errorf("cancel: %s", text(res))
				}
			}
			return true, nil
		}
		res := e.sweep(t0)
		fired := e.firer.take()
		if res.Fired != 1 || res.Lost != 1 || len(fired) != 1 || !strings.HasPrefix(fired[0].Text(), "first") {
			t.Fatalf("sweep %+v fired %d turns; want only the first, the canceled one lost\n%s", res, len(fired), e.log)
		}
		if _, ok := e.job(second.ID); ok {
			t.Error("the canceled job came back")
		}
	})
}

// The [Scheduled] index lists 20 jobs; past that it counts the rest.
func TestScheduledIndexLimit(t *testing.T) {
	for _, tc := range []struct {
		jobs int
		more string
	}{
		{20, ""},
		{21, "- … and 1 more; schedule_list shows every one."},
	} {
		e := newEnv(t, nil)
		sid := e.session(permission.Read)
		for i := range tc.jobs {
			e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0.Add(time.Duration(i+1) * time.Minute)})
		}
		parts := e.sched.Contributor(sid, func() permission.Level { return permission.Read }).Contribute(t.Context(), agentInfo())
		if len(parts) != 1 {
			t.Fatalf("%d jobs: index parts %v", tc.jobs, parts)
		}
		got := parts[0].(model.Text).Text
		if n := strings.Count(got, "\n- ") - strings.Count(got, "\n- …"); n != 20 {
			t.Errorf("%d jobs: %d listed, want 20:\n%s", tc.jobs, n, got)
		}
		if hasMore := strings.Contains(got, "more; schedule_list"); hasMore != (tc.more != "") || (tc.more != "" && !strings.HasSuffix(got, tc.more)) {
			t.Errorf("%d jobs: index ends\n%s\nwant %q", tc.jobs, got[max(0, len(got)-200):], tc.more)
		}
	}
}

// A one-shot exactly missed_grace late still fires; a second later it is
// dropped.
func TestOneShotAtTheEdgeOfMissedGrace(t *testing.T) {
	for _, tc := range []struct {
		late  time.Duration
		fired bool
	}{
		{schedule.DefaultMissedGrace, true},
		{schedule.DefaultMissedGrace + time.Second, false},
	} {
		e := newEnv(t, nil)
		sid := e.session(permission.Read)
		e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0})
		res := e.sweep(t0.Add(tc.late))
		if got := res.Fired == 1; got != tc.fired || res.Dropped != boolInt(!tc.fired) {
			t.Errorf("%v late: %+v, want fired %v", tc.late, res, tc.fired)
		}
	}
}

// A gate that says no is counted as declined, and the occurrence spent.
func TestDeclinedGateIsCounted(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	j := e.gated(sid, `{"check":{"command":"false"},"when":"succeeded"}`)
	res := e.sweep(t0)
	if res.Declined != 1 || res.Fired != 0 {
		t.Errorf("sweep %+v, want one declined", res)
	}
	if after, _ := e.job(j.ID); !after.NextAt.After(t0) || after.LeaseOwner != "" {
		t.Errorf("the declined occurrence was not spent: %+v", after)
	}
}

// A turn neither delivered nor declined keeps its claim, so the lease runs
// out and counts against the job, instead of being handed straight back.
func TestUndeliveredTurnKeepsItsClaim(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0})
	e.firer.fire = func(context.Context, string, schedule.Firing) (bool, error) {
		return false, fmt.Errorf("the host lost its database")
	}
	res := e.sweep(t0)
	if res.Fired != 0 || res.Returned != 0 {
		t.Errorf("sweep %+v, want nothing fired or returned", res)
	}
	if after, ok := e.job(j.ID); !ok || after.LeaseOwner != "test-host" {
		t.Errorf("after an undelivered turn the job is %+v, want still claimed", after)
	}
	if !strings.Contains(e.log.String(), "the turn was not delivered") {
		t.Errorf("not logged:\n%s", e.log)
	}
}

// What a gate printed reaches the turn whole when it fits: stdout of
// exactly MaxTurnOutput bytes is not marked cut, stderr alone is shown, no
// stderr adds no stderr section, and stderr is cut to what stdout left.
func TestGateOutputEdges(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Unrestricted)
	turnOf := func(name, content, command string) string {
		t.Helper()
		e.write(name, content)
		j := e.gated(sid, `{"check":{"command":"`+command+`"},"when":"succeeded"}`)
		fired, turn := e.step(j.ID)
		if !fired {
			t.Fatalf("%s: the gate did not fire\n%s", command, e.log)
		}
		return turn
	}

	exact := strings.Repeat("x", schedule.MaxTurnOutput)
	if turn := turnOf("exact", exact, "cat exact"); !strings.HasSuffix(turn, exact) || strings.Contains(turn, "cut:") || strings.Contains(turn, "stderr:") {
		t.Errorf("stdout of exactly %d bytes: tail %q", schedule.MaxTurnOutput, turn[len(turn)-100:])
	}
	if turn := turnOf("small", "hi\n", "cat small"); !strings.HasSuffix(turn, "\n\nhi\n") {
		t.Errorf("stdout only: tail %q", turn[max(0, len(turn)-100):])
	}
	if turn := turnOf("err", "only here\n", "cat err >&2"); !strings.HasSuffix(turn, "What the check returned, so you need not run it again:\n\n\n\nstderr:\nonly here\n") {
		t.Errorf("stderr alone: tail %q", turn[max(0, len(turn)-150):])
	}
	turn := turnOf("lots", strings.Repeat("e", 3*schedule.MaxTurnOutput), "echo 0123456789; cat lots >&2")
	_, stderr, _ := strings.Cut(turn, "stderr:\n")
	if got := len(stderr) - len(strings.TrimLeft(stderr, "e")); got != schedule.MaxTurnOutput-11 {
		t.Errorf("stdout of 11 bytes and stderr of %d: %d bytes of stderr reach the turn, want %d", 3*schedule.MaxTurnOutput, got, schedule.MaxTurnOutput-11)
	}
}

// A one-shot a minute late or more is told so.
func TestOneShotToldItIsLate(t *testing.T) {
	for _, tc := range []struct {
		late time.Duration
		told bool
	}{
		{time.Minute, true},
		{time.Minute - time.Second, false},
	} {
		e := newEnv(t, nil)
		sid := e.session(permission.Read)
		e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0})
		e.sweep(t0.Add(tc.late))
		f := e.firer.take()
		if len(f) != 1 {
			t.Fatalf("%v late: %d turns", tc.late, len(f))
		}
		if told := strings.Contains(f[0].Text(), "It is 1m late"); told != tc.told {
			t.Errorf("%v late: told %v, want %v:\n%s", tc.late, told, tc.told, f[0].Text())
		}
	}
}

// Without max_jobs set a session holds 50 jobs, and the 51st is refused.
func TestDefaultMaxJobs(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	for i := range schedule.DefaultMaxJobs {
		e.create(sid, permission.Read, fmt.Sprintf(`{"prompt": "p%d", "in": "1h"}`, i))
	}
	res := e.call(schedule.CreateToolName, sid, permission.Read, `{"prompt": "one more", "in": "1h"}`)
	if !res.IsError || !strings.Contains(text(res), "already has 50 jobs") {
		t.Errorf("the 51st job: %s", text(res))
	}
}

// storeFaults is a store whose claims come back empty (another host was
// first) or whose advances fail.
type storeFaults struct {
	schedule.Store
	loseClaims  bool
	failAdvance error
}

func (s *storeFaults) Claim(ctx context.Context, c schedule.Claim) ([]schedule.Job, error) {
	if s.loseClaims {
		return nil, nil
	}
	return s.Store.Claim(ctx, c)
}

func (s *storeFaults) Advance(ctx context.Context, id, owner string, a schedule.Advance) (bool, error) {
	if s.failAdvance != nil {
		return false, s.failAdvance
	}
	return s.Store.Advance(ctx, id, owner, a)
}

// A due job another host claimed first is counted lost and not fired; a
// store that fails to move a job on fails the sweep, whether the job
// fired or was withheld.
func TestSweepCountsLostAndReportsStoreFailures(t *testing.T) {
	faults := &storeFaults{}
	e := newEnv(t, func(o *schedule.Options) { faults.Store = o.Store; o.Store = faults })
	sid := e.session(permission.Read)
	e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindEvery, Spec: "1m", Interval: time.Minute, NextAt: t0})

	faults.loseClaims = true
	if res, err := e.sched.Sweep(t.Context(), t0); err != nil || res.Lost != 1 || res.Fired != 0 {
		t.Errorf("claim lost: %+v, %v", res, err)
	}
	faults.loseClaims = false

	broken := errors.New("disk full")
	faults.failAdvance = broken
	if res, err := e.sched.Sweep(t.Context(), t0); !errors.Is(err, broken) || res.Fired != 1 {
		t.Errorf("advance failing after a fire: %+v, %v; want the store's error", res, err)
	}
	// Withheld: the occurrence is spent, and that fails too.
	e.firer.setLevel(sid, permission.None)
	if res, err := e.sched.Sweep(t.Context(), t0.Add(2*time.Hour)); !errors.Is(err, broken) || res.Withheld != 1 {
		t.Errorf("advance failing for a withheld job: %+v, %v; want the store's error", res, err)
	}
}

// Where commands cannot be confined a shell_execute gate is no gate and is
// withheld; another tool's gate is not.
func TestUnconfinedShellGateWithheld(t *testing.T) {
	shell := schedule.Job{Level: "read", Gate: `{"check":{"tool":"shell_execute","arguments":{"command":"date"}},"when":"changed"}`}
	if v := schedule.Withheld(shell, permission.Read, nil, false); !v.Known || !strings.Contains(v.Reason, "cannot be confined on this machine") {
		t.Errorf("shell_execute gate unconfined: %+v", v)
	}
	if v := schedule.Withheld(shell, permission.Read, func(string) (permission.Level, bool) { return permission.Read, true }, true); v.Reason != "" {
		t.Errorf("shell_execute gate confined: %+v", v)
	}
	other := schedule.Job{Level: "read", Gate: `{"check":{"tool":"probe"},"when":"changed"}`}
	if v := schedule.Withheld(other, permission.Read, func(string) (permission.Level, bool) { return permission.Read, true }, false); v.Reason != "" || !v.Known {
		t.Errorf("another tool's gate unconfined: %+v", v)
	}
}
