package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// expire ends every lease on the session's lock now, as the server's
// clock passing its end would.
func expire(t *testing.T, url, sessionID string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `UPDATE locks SET expires_at = now() - interval '1 second' WHERE session_id = $1`, sessionID); err != nil {
		t.Fatal(err)
	}
}

func note(title string) []session.Row {
	return []session.Row{{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: title}}}}}
}

// TestLockAcrossHosts plays two machines (two host names) on one
// database: a live holder elsewhere is refused by name, even when its
// process id is dead here; after its lease it is taken over, and from
// then on its appends are fenced off while the new holder's go in.
func TestLockAcrossHosts(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	// A pid no process has here: only the lease can free its lock.
	a := open(t, url, postgres.Options{Host: "alpha", PID: 1 << 30})
	b := open(t, url, postgres.Options{Host: "beta", PID: 4242})
	m, err := a.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Sessions().Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sessions().Append(ctx, m.ID, note("from alpha")); err != nil {
		t.Fatalf("holder's append: %v", err)
	}

	_, err = b.Sessions().Lock(ctx, m.ID, session.Holder{})
	var held *session.HeldError
	if !errors.As(err, &held) || held.Holder.Host != "alpha" || held.Holder.PID != 1<<30 {
		t.Fatalf("Lock from another host: %v, want held by alpha", err)
	}
	if _, err := b.Sessions().Append(ctx, m.ID, note("from beta")); !errors.As(err, &held) || held.Holder.Host != "alpha" {
		t.Fatalf("append by a non-holder while alpha holds: %v, want held by alpha", err)
	}

	expire(t, url, m.ID)
	lb, err := b.Sessions().Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatalf("Lock after the lease ran out: %v", err)
	}
	if lb.(*postgres.Lock).Fence() <= la.(*postgres.Lock).Fence() {
		t.Errorf("fence %d after %d, want larger", lb.(*postgres.Lock).Fence(), la.(*postgres.Lock).Fence())
	}
	_, err = a.Sessions().Append(ctx, m.ID, note("late alpha"))
	if !errors.Is(err, postgres.ErrFenced) || !errors.Is(err, session.ErrNotHeld) {
		t.Fatalf("append under a lock taken over: %v, want ErrFenced", err)
	}
	if _, err := b.Sessions().Append(ctx, m.ID, note("from beta")); err != nil {
		t.Fatalf("new holder's append: %v", err)
	}
	rows, err := b.Sessions().Rows(ctx, m.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		got = append(got, r.Entry.(session.UserMessage).Parts[0].(model.Text).Text)
	}
	if len(got) != 2 || got[0] != "from alpha" || got[1] != "from beta" {
		t.Errorf("rows %q, want alpha's then beta's, none of the fenced append", got)
	}
	if err := la.Release(ctx); !errors.Is(err, session.ErrNotHeld) {
		t.Errorf("release of a lock taken over: %v, want ErrNotHeld", err)
	}
}

// TestLockLostByRefresh checks that the refresher notices a take-over.
func TestLockLostByRefresh(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	a := open(t, url, postgres.Options{Host: "alpha", PID: 1 << 30, LockLease: 300 * time.Millisecond})
	b := open(t, url, postgres.Options{Host: "beta"})
	m, err := a.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Sessions().Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	// alpha's refresher runs every 100 ms and may renew the lease between
	// the expiry and beta's take-over (a loaded machine): expire again
	// until beta wins. Only a lock still held by alpha refuses beta.
	for attempt := 1; ; attempt++ {
		expire(t, url, m.ID)
		_, err := b.Sessions().Lock(ctx, m.ID, session.Holder{})
		if err == nil {
			break
		}
		if !errors.Is(err, session.ErrHeld) || attempt == 50 {
			t.Fatalf("take-over, attempt %d: %v", attempt, err)
		}
	}
	select {
	case <-la.(*postgres.Lock).Lost():
	case <-ctx.Done():
		t.Fatal("the refresher never saw the take-over")
	}
}

// TestWatchJobs checks that a job created through one handle wakes a
// watcher on another.
func TestWatchJobs(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	a := open(t, url, postgres.Options{})
	b := open(t, url, postgres.Options{})
	wake := b.WatchJobs(ctx)
	m, err := a.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	<-wake // listening
	if _, err := a.Schedules().Create(ctx, postgres.Job{SessionID: m.ID, Prompt: "p", Kind: "once", NextAt: time.Now()}, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-ctx.Done():
		t.Fatal("no wake-up")
	}
}

// TestServerClock checks that Now follows the server's clock.
func TestServerClock(t *testing.T) {
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	got := db.Now()
	if d := time.Since(got); d < -time.Second || d > time.Second {
		t.Errorf("Now = %v, %v from this machine's clock on one machine", got, d)
	}
}

// TestDeliveryRecorded checks that an advance after a delivery records
// the occurrence and its owner once, and keeps only the job's last.
func TestDeliveryRecorded(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	s := db.Schedules()
	j, err := s.Create(ctx, postgres.Job{SessionID: m.ID, Prompt: "p", Kind: "every", Interval: time.Hour, NextAt: t0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, owner := range []string{"a", "b"} {
		at := t0.Add(time.Duration(i) * time.Hour)
		if got, err := s.Claim(ctx, postgres.Claim{IDs: []string{j.ID}, Owner: owner, Now: at, Until: at.Add(time.Minute)}); err != nil || len(got) != 1 {
			t.Fatalf("claim %d: %v %v", i, got, err)
		}
		if ok, err := s.Advance(ctx, j.ID, owner, postgres.Advance{NextAt: at.Add(time.Hour), FiredAt: at}); !ok || err != nil {
			t.Fatalf("advance %d: %v %v", i, ok, err)
		}
		if who, err := s.Delivered(ctx, j.ID, at); err != nil || who != owner {
			t.Errorf("occurrence %v delivered by %q (%v), want %s", at, who, err, owner)
		}
	}
	if who, _ := s.Delivered(ctx, j.ID, t0); who != "" {
		t.Errorf("an older occurrence is still recorded (by %s)", who)
	}
}
