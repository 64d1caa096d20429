package sessiontest

import (
	"errors"
	"testing"

	"meka.dev/meka/session"
)

func mustLock(t *testing.T, s session.Store, id string, h session.Holder) session.Lock {
	t.Helper()
	l, err := s.Lock(t.Context(), id, h)
	if err != nil {
		t.Fatalf("Lock(%s, %+v): %v", id, h, err)
	}
	t.Cleanup(func() { l.Release(t.Context()) })
	return l
}

// checkHeld fails unless err reports the session held by want.
func checkHeld(t *testing.T, what string, err error, id string, want session.Holder) {
	t.Helper()
	var held *session.HeldError
	if !errors.As(err, &held) || !errors.Is(err, session.ErrHeld) {
		t.Errorf("%s: %v, want a *session.HeldError", what, err)
		return
	}
	if held.SessionID != id || held.Holder.PID != want.PID || held.Holder.Host != want.Host {
		t.Errorf("%s: held %s by %v, want %s by %v", what, held.SessionID, held.Holder, id, want)
	}
}

// testLock plays two processes with two handles on one database.
func testLock(t *testing.T, open Opener) {
	ctx := t.Context()
	a, b := store(t, open), store(t, open)
	m := mustCreate(t, a, session.Meta{Cwd: "/w"})
	other := mustCreate(t, a, session.Meta{Cwd: "/w"})

	la := mustLock(t, a, m.ID, session.Holder{})
	h := la.Holder()
	if h.PID == 0 || h.Host == "" || h.Token == "" {
		t.Errorf("Lock filled holder %+v, want this process's pid and host and a token", h)
	}
	_, err := b.Lock(ctx, m.ID, session.Holder{})
	checkHeld(t, "Lock from another handle", err, m.ID, h)
	_, err = a.Lock(ctx, m.ID, session.Holder{})
	checkHeld(t, "second Lock from the same handle", err, m.ID, h)
	mustLock(t, b, other.ID, session.Holder{}).Release(ctx) // other sessions stay free

	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Errorf("second Release: %v", err)
	}
	lb := mustLock(t, b, m.ID, session.Holder{})
	_, err = a.Lock(ctx, m.ID, session.Holder{})
	checkHeld(t, "Lock after the other handle took it", err, m.ID, lb.Holder())
	if err := lb.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustLock(t, a, m.ID, session.Holder{})

	if _, err := a.Lock(ctx, unknownID, session.Holder{}); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Lock of an unknown session: %v, want ErrNotFound", err)
	}
}

// testLockOwnToken checks that a holder presenting the token it locked
// with takes its session back.
func testLockOwnToken(t *testing.T, open Opener) {
	ctx := t.Context()
	a, b := store(t, open), store(t, open)
	m := mustCreate(t, a, session.Meta{Cwd: "/w"})

	first := mustLock(t, a, m.ID, session.Holder{Token: "reopened"})
	if got := first.Holder().Token; got != "reopened" {
		t.Errorf("Lock kept token %q, want %q", got, "reopened")
	}
	second := mustLock(t, b, m.ID, session.Holder{Token: "reopened"})
	if err := second.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustLock(t, b, m.ID, session.Holder{})
}

// testLockReleasedOnClose checks that closing a store gives up its locks.
func testLockReleasedOnClose(t *testing.T, open Opener) {
	a, b := store(t, open), store(t, open)
	m := mustCreate(t, a, session.Meta{Cwd: "/w"})
	mustLock(t, a, m.ID, session.Holder{})
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mustLock(t, b, m.ID, session.Holder{})
}

// testHolders checks that Holders names the holder of each session held,
// as another handle sees it, and nothing for one free or released.
func testHolders(t *testing.T, open Opener) {
	ctx := t.Context()
	a, b := store(t, open), store(t, open)
	held := mustCreate(t, a, session.Meta{Cwd: "/w"})
	free := mustCreate(t, a, session.Meta{Cwd: "/w"})
	elsewhere := session.Holder{PID: 4242, Host: "elsewhere.example"}
	l := mustLock(t, a, held.ID, elsewhere)

	got, err := b.Holders(ctx, []string{held.ID, free.ID, unknownID})
	if err != nil {
		t.Fatalf("Holders: %v", err)
	}
	if len(got) != 1 || got[held.ID].PID != elsewhere.PID || got[held.ID].Host != elsewhere.Host || got[held.ID].Token != "" {
		t.Errorf("Holders = %+v, want only %s held by %v, without its token", got, held.ID, elsewhere)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got, err := b.Holders(ctx, []string{held.ID, free.ID}); err != nil || len(got) != 0 {
		t.Errorf("Holders after release = %+v, %v, want none", got, err)
	}
	if got, err := b.Holders(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Holders of no ids = %+v, %v, want none", got, err)
	}
}
