package schedule_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// benchStore opens a database with 10,000 hourly jobs over 100 sessions,
// of which the first 100 are due at t0 and the rest years away.
func benchStore(b *testing.B) (schedule.Store, *firer) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	st := sqlitestore.New(db.Schedules())
	f := newFirer()
	var sessions []string
	for range 100 {
		m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w", Permission: "read"})
		if err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, m.ID)
		f.hold(m.ID, permission.Read)
	}
	for i := range 10_000 {
		next := t0.Add(10 * 365 * 24 * time.Hour)
		if i < 100 {
			next = t0.Add(-time.Duration(i) * time.Second)
		}
		_, err := st.Create(ctx, schedule.Job{SessionID: sessions[i%100], Prompt: fmt.Sprintf("job %d", i),
			Kind: schedule.KindEvery, Spec: "1h", Interval: time.Hour, Zone: "UTC", NextAt: next, Level: "read"}, 0)
		if err != nil {
			b.Fatal(err)
		}
	}
	return st, f
}

// BenchmarkSweep sweeps 10,000 jobs of which 100 are due, each sweep an
// hour after the last so that the same 100 are due again: find, claim,
// fire (a host that delivers at once) and advance every one.
func BenchmarkSweep(b *testing.B) {
	st, f := benchStore(b)
	s, err := schedule.New(schedule.Options{Store: st, Firer: f, Owner: "bench", MaxConsecutiveFires: 100})
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Sweep(context.Background(), now)
		if err != nil || res.Fired != 100 {
			b.Fatalf("sweep: %+v, %v", res, err)
		}
		f.take()
		now = now.Add(time.Hour)
	}
}

// BenchmarkFindAndClaim is the part of a sweep the issue budgets: read the
// due jobs among 10,000 and claim each with its conditional write.
func BenchmarkFindAndClaim(b *testing.B) {
	st, _ := benchStore(b)
	ctx := context.Background()
	now := t0
	b.ResetTimer()
	for b.Loop() {
		due, err := st.Due(ctx, now, 1000)
		if err != nil || len(due) != 100 {
			b.Fatalf("due: %d, %v", len(due), err)
		}
		ids := make([]string, len(due))
		for i, j := range due {
			ids[i] = j.ID
		}
		got, err := st.Claim(ctx, schedule.Claim{IDs: ids, Owner: "bench", Now: now, Until: now.Add(time.Minute)})
		if err != nil || len(got) != 100 {
			b.Fatalf("claimed %d: %v", len(got), err)
		}
		// The leases lapse by the next round's clock.
		now = now.Add(time.Minute)
	}
}
