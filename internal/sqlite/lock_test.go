package sqlite_test

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

// clock is a settable injected clock.
type clock struct{ now atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) set(t time.Time) { c.now.Store(t.UnixNano()) }
func (c *clock) Now() time.Time  { return time.Unix(0, c.now.Load()) }

func TestLockLeaseExpiry(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meka.db")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Host a's clock stands still, so whatever its refresher writes, its
	// lease ends at t0+30s.
	a := open(t, path, sqlite.Options{Now: func() time.Time { return t0 }, Host: "host-a", PID: 4242}).Sessions()
	bClock := newClock(t0.Add(10 * time.Second))
	b := open(t, path, sqlite.Options{Now: bClock.Now, Host: "host-b", PID: 4343}).Sessions()

	m, err := a.Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Lock(ctx, m.ID, session.Holder{})
	var held *session.HeldError
	if !errors.As(err, &held) || held.Holder.PID != 4242 || held.Holder.Host != "host-a" {
		t.Fatalf("Lock from another host during the lease: %v, want held by pid 4242 on host-a", err)
	}

	bClock.set(t0.Add(sqlite.DefaultLockLease))
	lb, err := b.Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatalf("Lock from another host once the lease ran out: %v", err)
	}
	if h := lb.Holder(); h.PID != 4343 || h.Host != "host-b" {
		t.Errorf("new holder %v, want pid 4343 on host-b", h)
	}

	// The old holder's release must not free what it no longer holds.
	if err := la.Release(ctx); !errors.Is(err, session.ErrNotHeld) {
		t.Errorf("Release of a lock taken over: %v, want ErrNotHeld", err)
	}
	_, err = a.Lock(ctx, m.ID, session.Holder{})
	if !errors.As(err, &held) || held.Holder.Host != "host-b" {
		t.Errorf("Lock after the stale release: %v, want held by host-b", err)
	}
}

// TestLockRefresh lets fake time run past several leases: the refresher
// keeps the lock, and once released the session is free.
func TestLockRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "meka.db")
		opts := sqlite.Options{Host: "a", LockLease: 30 * time.Second}
		a := open(t, path, opts).Sessions()
		opts.Host = "b"
		b := open(t, path, opts).Sessions()
		m, err := a.Create(ctx, session.Meta{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		la, err := a.Lock(ctx, m.ID, session.Holder{})
		if err != nil {
			t.Fatal(err)
		}

		time.Sleep(95 * time.Second) // three leases; refreshed every 10s
		synctest.Wait()
		if _, err := b.Lock(ctx, m.ID, session.Holder{}); !errors.Is(err, session.ErrHeld) {
			t.Fatalf("Lock from another host after 95s of a refreshed lease: %v, want ErrHeld", err)
		}
		select {
		case <-la.(*sqlite.Lock).Lost():
			t.Fatal("a refreshed lock reports itself lost")
		default:
		}
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		lb, err := b.Lock(ctx, m.ID, session.Holder{})
		if err != nil {
			t.Fatalf("Lock after Release: %v", err)
		}
		lb.Release(ctx)
	})
}

// TestLockLost has a holder whose clock lags: its lease looks expired to
// another host, which takes the session; the next refresh finds out.
func TestLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "meka.db")
		lagging := func() time.Time { return time.Now().Add(-time.Hour) }
		a := open(t, path, sqlite.Options{Host: "a", Now: lagging}).Sessions()
		b := open(t, path, sqlite.Options{Host: "b"}).Sessions()
		m, err := a.Create(ctx, session.Meta{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		la, err := a.Lock(ctx, m.ID, session.Holder{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Lock(ctx, m.ID, session.Holder{}); err != nil {
			t.Fatalf("Lock over a lease an hour old: %v", err)
		}

		time.Sleep(sqlite.DefaultLockLease/3 + time.Second)
		synctest.Wait()
		select {
		case <-la.(*sqlite.Lock).Lost():
		default:
			t.Fatal("the first holder did not notice it lost the lock")
		}
		if err := la.Release(ctx); !errors.Is(err, session.ErrNotHeld) {
			t.Errorf("Release of a lost lock: %v, want ErrNotHeld", err)
		}
		if _, err := a.Lock(ctx, m.ID, session.Holder{}); !errors.Is(err, session.ErrHeld) {
			t.Errorf("Lock after the lost lock's release: %v, want ErrHeld (b still holds it)", err)
		}
	})
}
