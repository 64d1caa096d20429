// Package scheduletest is the conformance suite for schedule.Store, run
// against every implementation (internal/sqlite and internal/postgres,
// through their adapters) as sessiontest is for session.Store.
//
// It imports internal/schedule and session only.
package scheduletest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/session"
)

// Harness is one fresh, empty database as the suite uses it.
type Harness struct {
	// Store is the schedule store; its stores' clock (for CreatedAt)
	// reads St0.
	Store schedule.Store
	// NewSession creates a session and returns its id.
	NewSession func(t *testing.T) string
	// DeleteSession deletes a session through the session store.
	DeleteSession func(t *testing.T, id string)
}

// St0 is the time a harness's store clock reads.
var St0 = time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)

// Run runs the suite; newDB returns a harness on a fresh database and is
// called once per subtest.
func Run(t *testing.T, newDB func(t *testing.T) Harness) {
	for _, tc := range []struct {
		name string
		test func(t *testing.T, h Harness)
	}{
		{"CreateGetList", testCreateGetList},
		{"MaxJobsIsAtomic", testMaxJobsIsAtomic},
		{"Leases", testLeases},
		{"ParksAfterFailedClaims", testParksAfterFailedClaims},
		{"ClaimIsExclusive", testClaimIsExclusive},
		{"DeleteWinsAndCascades", testDeleteWinsAndCascades},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, newDB(t)) })
	}
}

var st0 = St0

func hourly(sessionID string, next time.Time) schedule.Job {
	return schedule.Job{SessionID: sessionID, Prompt: "p", Kind: "every", Spec: "1h", Interval: time.Hour, Zone: "UTC", NextAt: next, Level: "read"}
}

func testCreateGetList(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	ctx := t.Context()
	j := hourly(sid, st0.Add(time.Hour))
	j.ID = "7F3A1B2C-0000-4000-8000-000000000001"
	j.Gate, j.Baseline, j.HasBaseline = `{"check":{"command":"x"},"when":"changed"}`, "sha256:00", true
	j.Isolation = schedule.IsolationWorktree
	created, err := s.Create(ctx, j, 0)
	if err != nil {
		t.Fatal(err)
	}
	if created.ID != "7f3a1b2c-0000-4000-8000-000000000001" || !created.CreatedAt.Equal(st0) {
		t.Errorf("created %+v", created)
	}
	got, err := s.Get(ctx, "7F3A")
	if err != nil {
		t.Fatal(err)
	}
	if got != created || got.Isolation != schedule.IsolationWorktree {
		t.Errorf("Get = %+v\nwant %+v", got, created)
	}
	other := hourly(sid, st0)
	other.ID = "7f3a1b2c-0000-4000-8000-000000000002"
	if _, err := s.Create(ctx, other, 0); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]error{
		"7f3a1b2c":                             schedule.ErrAmbiguous,
		"7f3a1b2c-0000-4000-8000-000000000002": nil,
		"0000":                                 schedule.ErrNotFound,
		"zz":                                   schedule.ErrNotFound,
		"":                                     schedule.ErrNotFound,
	} {
		if _, err := s.Get(ctx, prefix); !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("Get(%q) = %v, want %v", prefix, err, want)
		}
	}
	list, err := s.List(ctx, sid)
	if err != nil || len(list) != 2 || list[0].ID != other.ID {
		t.Errorf("List = %v, %v; want by next occurrence", list, err)
	}
	if all, _ := s.List(ctx, ""); len(all) != 2 {
		t.Errorf("List all = %d", len(all))
	}
	if _, err := s.Create(ctx, hourly("00000000-0000-4000-8000-000000000000", st0), 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Create for a missing session: %v", err)
	}
}

func testMaxJobsIsAtomic(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	// Several connections (as several hosts) race for the last places.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Create(t.Context(), hourly(sid, st0), 5)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	ok, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, schedule.ErrTooManyJobs):
			refused++
		default:
			t.Error(err)
		}
	}
	if ok != 5 || refused != 15 {
		t.Errorf("%d created, %d refused; want 5 and 15", ok, refused)
	}
}

func testLeases(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	ctx := t.Context()
	j, err := s.Create(ctx, hourly(sid, st0), 0)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(owner string, now time.Time) []schedule.Job {
		t.Helper()
		got, err := s.Claim(ctx, schedule.Claim{IDs: []string{j.ID}, Owner: owner, Now: now, Until: now.Add(time.Hour), MaxFailed: 3, Held: "stuck"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := claim("a", st0.Add(-time.Second)); len(got) != 0 {
		t.Fatal("claimed an occurrence before it was due")
	}
	got := claim("a", st0)
	if len(got) != 1 || got[0].LeaseOwner != "a" || !got[0].LeaseUntil.Equal(st0.Add(time.Hour)) || got[0].FailedClaims != 0 {
		t.Fatalf("claim: %+v", got)
	}
	if got := claim("b", st0.Add(59*time.Minute)); len(got) != 0 {
		t.Fatal("b took a held lease")
	}
	if due, _ := s.Due(ctx, st0.Add(59*time.Minute), 10); len(due) != 0 {
		t.Error("a leased job is due")
	}
	// Only the owner advances, releases or retires.
	for _, op := range []func() (bool, error){
		func() (bool, error) { return s.Advance(ctx, j.ID, "b", schedule.Advance{NextAt: st0.Add(time.Hour)}) },
		func() (bool, error) { return s.Release(ctx, j.ID, "b") },
		func() (bool, error) { return s.Retire(ctx, j.ID, "b") },
		func() (bool, error) { return s.Renew(ctx, j.ID, "b", st0.Add(2*time.Hour)) },
		func() (bool, error) { return s.Release(ctx, j.ID, "") },
	} {
		if ok, err := op(); ok || err != nil {
			t.Errorf("a non-owner's write: %v, %v", ok, err)
		}
	}
	// The lease lapses: b takes over, and a's claim is counted.
	got = claim("b", st0.Add(time.Hour))
	if len(got) != 1 || got[0].LeaseOwner != "b" || got[0].FailedClaims != 1 {
		t.Fatalf("take-over: %+v", got)
	}
	base := "sha256:11"
	fired := st0.Add(time.Hour)
	if ok, err := s.Advance(ctx, j.ID, "b", schedule.Advance{NextAt: st0.Add(2 * time.Hour), FiredAt: fired, Baseline: &base}); !ok || err != nil {
		t.Fatalf("advance: %v, %v", ok, err)
	}
	after, _ := s.Get(ctx, j.ID)
	if after.LeaseOwner != "" || !after.LeaseUntil.IsZero() || after.FailedClaims != 0 || !after.LastFiredAt.Equal(fired) ||
		!after.HasBaseline || after.Baseline != base || !after.NextAt.Equal(st0.Add(2*time.Hour)) {
		t.Errorf("after advance: %+v", after)
	}
	// An advance without a baseline keeps the stored one.
	claim("a", st0.Add(2*time.Hour))
	s.Advance(ctx, j.ID, "a", schedule.Advance{NextAt: st0.Add(3 * time.Hour)})
	if after, _ := s.Get(ctx, j.ID); after.Baseline != base || !after.LastFiredAt.Equal(fired) {
		t.Errorf("advance without baseline: %+v", after)
	}
	// A release hands back without counting.
	claim("a", st0.Add(3*time.Hour))
	if ok, _ := s.Release(ctx, j.ID, "a"); !ok {
		t.Fatal("release failed")
	}
	if got := claim("b", st0.Add(3*time.Hour)); len(got) != 1 || got[0].FailedClaims != 0 {
		t.Errorf("claim after a handback: %+v", got)
	}
}

func testParksAfterFailedClaims(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	ctx := t.Context()
	j, _ := s.Create(ctx, hourly(sid, st0), 0)
	now := st0
	for i := range 4 {
		got, err := s.Claim(ctx, schedule.Claim{IDs: []string{j.ID}, Owner: "x", Now: now, Until: now.Add(time.Minute), MaxFailed: 3, Held: "stuck"})
		if err != nil || len(got) != 1 {
			t.Fatalf("claim %d: %v %v", i, got, err)
		}
		if i < 3 && (got[0].Held != "" || got[0].FailedClaims != i) {
			t.Errorf("claim %d: %+v", i, got[0])
		}
		if i == 3 && (got[0].Held != "stuck" || got[0].LeaseOwner != "" || got[0].FailedClaims != 3) {
			t.Errorf("fourth claim did not park: %+v", got[0])
		}
		now = now.Add(2 * time.Minute)
	}
	if due, _ := s.Due(ctx, now.Add(time.Hour), 10); len(due) != 0 {
		t.Error("a parked job is due")
	}
	if got, _ := s.Claim(ctx, schedule.Claim{IDs: []string{j.ID}, Owner: "y", Now: now, Until: now.Add(time.Minute)}); len(got) != 0 {
		t.Error("claimed a parked job")
	}
}

func testClaimIsExclusive(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	ctx := t.Context()
	var ids []string
	for range 50 {
		j, _ := s.Create(ctx, hourly(sid, st0), 0)
		ids = append(ids, j.ID)
	}
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	for _, owner := range []string{"a", "b", "c", "d"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.Claim(ctx, schedule.Claim{IDs: ids, Owner: owner, Now: st0, Until: st0.Add(time.Hour)})
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, j := range got {
				count[j.ID]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("job %s claimed %d times", id, count[id])
		}
	}
}

func testDeleteWinsAndCascades(t *testing.T, h Harness) {
	s, sid := h.Store, h.NewSession(t)
	ctx := t.Context()
	j, _ := s.Create(ctx, hourly(sid, st0), 0)
	s.Claim(ctx, schedule.Claim{IDs: []string{j.ID}, Owner: "a", Now: st0, Until: st0.Add(time.Hour)})
	if ok, err := s.Delete(ctx, j.ID); !ok || err != nil {
		t.Fatalf("delete a leased job: %v %v", ok, err)
	}
	// The lease holder's handback cannot bring it back.
	if ok, _ := s.Release(ctx, j.ID, "a"); ok {
		t.Error("released a deleted job")
	}
	if ok, _ := s.Advance(ctx, j.ID, "a", schedule.Advance{NextAt: st0.Add(time.Hour)}); ok {
		t.Error("advanced a deleted job")
	}
	if _, err := s.Get(ctx, j.ID); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Get after delete: %v", err)
	}
	if ok, _ := s.Delete(ctx, j.ID); ok {
		t.Error("deleted twice")
	}
	k, _ := s.Create(ctx, hourly(sid, st0), 0)
	h.DeleteSession(t, sid)
	if _, err := s.Get(ctx, k.ID); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("a deleted session's job survives: %v", err)
	}
}
