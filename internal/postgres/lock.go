package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meka.dev/meka/session"
)

// errNotOurs reports a release that found the lock row taken over.
var errNotOurs = errors.New("lock row is not ours")

// takeAttempts bounds the read-then-retry rounds of one Lock call, for a
// lock that keeps changing hands while we look at it.
const takeAttempts = 3

// Lock takes a session for writing. The lock is a row in the database
// with a lease counted on the server's clock, so it holds across hosts
// whose clocks disagree.
//
// It is taken by one conditional write that succeeds when nobody holds the
// session, when the holder's lease has expired, or when the holder has the
// caller's token; each taking draws a new fencing number, which every
// append through this DB then checks (see Append). Failing that, a holder
// on this same machine whose process is gone is taken over by a
// compare-and-swap on its token. Anyone else is reported as a
// *session.HeldError naming the holder's pid and host.
//
// Empty PID and Host in h mean this process (Options.PID, Options.Host);
// an empty Token gets a fresh one.
func (s *Sessions) Lock(ctx context.Context, sessionID string, h session.Holder) (session.Lock, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("lock session: %w", err)
	}
	if h.PID == 0 {
		h.PID = db.opts.PID
	}
	if h.Host == "" {
		h.Host = db.opts.Host
	}
	if h.Token == "" {
		u, err := uuid.NewRandom()
		if err != nil {
			return nil, fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		h.Token = u.String()
	}
	fence, err := db.takeLock(ctx, sessionID, h)
	if err != nil {
		return nil, err
	}

	rctx, stop := context.WithCancel(context.Background())
	l := &Lock{db: db, sessionID: sessionID, holder: h, fence: fence, stop: stop, done: make(chan struct{}), lost: make(chan struct{})}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		stop()
		db.pool.Exec(context.WithoutCancel(ctx), `DELETE FROM locks WHERE session_id = $1 AND fence = $2`, sessionID, fence)
		return nil, fmt.Errorf("lock session %s: %w", sessionID, ErrClosed)
	}
	db.locks[l] = struct{}{}
	db.held[sessionID] = l
	go l.refresh(rctx)
	return l, nil
}

// heldLock returns the lock this DB holds on a session, nil for none.
func (db *DB) heldLock(sessionID string) *Lock {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.held[sessionID]
}

// leaseArg is a lease as the interval arithmetic below takes it.
func leaseArg(d time.Duration) int64 { return d.Microseconds() }

// takeLock writes h as the holder of the session and returns the fence
// it was given, or says who holds it.
func (db *DB) takeLock(ctx context.Context, sessionID string, h session.Holder) (int64, error) {
	lease := leaseArg(db.opts.LockLease)
	var cur lockRow
	for range takeAttempts {
		var fence int64
		err := db.pool.QueryRow(ctx, `
INSERT INTO locks (session_id, pid, host, token, fence, expires_at)
VALUES ($1, $2, $3, $4, nextval('lock_fence'), now() + $5 * interval '1 microsecond')
ON CONFLICT (session_id) DO UPDATE
SET pid = excluded.pid, host = excluded.host, token = excluded.token, fence = excluded.fence, expires_at = excluded.expires_at
WHERE locks.expires_at <= now() OR locks.token = excluded.token
RETURNING fence`, sessionID, h.PID, h.Host, h.Token, lease).Scan(&fence)
		if pgCode(err) == codeForeignKeyViolation {
			return 0, fmt.Errorf("lock session %s: %w", sessionID, session.ErrNotFound)
		}
		if err == nil {
			return fence, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("lock session %s: %w", sessionID, reach(err))
		}

		err = db.pool.QueryRow(ctx, `SELECT pid, host, token, fence FROM locks WHERE session_id = $1`, sessionID).
			Scan(&cur.pid, &cur.host, &cur.token, &cur.fence)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released since: try again
		}
		if err != nil {
			return 0, fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		// Only a holder on this machine can be seen to have died before
		// its lease ends; one elsewhere is waited out.
		if cur.host != db.opts.Host || processAlive(cur.pid) {
			return 0, heldBy(sessionID, session.Holder{PID: cur.pid, Host: cur.host})
		}
		err = db.pool.QueryRow(ctx, `
UPDATE locks SET pid = $1, host = $2, token = $3, fence = nextval('lock_fence'), expires_at = now() + $4 * interval '1 microsecond'
WHERE session_id = $5 AND fence = $6 RETURNING fence`, h.PID, h.Host, h.Token, lease, sessionID, cur.fence).Scan(&fence)
		if err == nil {
			return fence, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		// Someone else took it over first; look again.
	}
	return 0, heldBy(sessionID, session.Holder{PID: cur.pid, Host: cur.host})
}

// heldBy reports the holder without its token: the token is what lets a
// holder take its own lock back, so it is not handed to others.
func heldBy(sessionID string, h session.Holder) error {
	return &session.HeldError{SessionID: sessionID, Holder: session.Holder{PID: h.PID, Host: h.Host}}
}

// Lock is a held session lock. A goroutine it owns refreshes the lease
// every LockLease/3 until Release, which stops and waits for it.
type Lock struct {
	db        *DB
	sessionID string
	holder    session.Holder
	fence     int64
	stop      context.CancelFunc
	done      chan struct{} // closed when the refresher has returned
	lost      chan struct{} // closed when a refresh finds the lock taken over

	once       sync.Once // releases once; concurrent callers wait for it
	releaseErr error
}

var _ session.Lock = (*Lock)(nil)

// Holder returns the holder recorded in the database.
func (l *Lock) Holder() session.Holder { return l.holder }

// Fence returns the lock's fencing number: larger for every later taking
// of any session's lock.
func (l *Lock) Fence() int64 { return l.fence }

// Lost is closed when a refresh finds that another holder took the
// session over (this process stalled past its lease) or that the session
// was deleted. Appends under the lock fail with ErrFenced from then on.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Release gives the session up: it stops the refresher and deletes the
// lock row if it is still ours. It fails with session.ErrNotHeld when the
// lock had been taken over. Calls after the first return nil.
func (l *Lock) Release(ctx context.Context) error {
	err := l.release(ctx)
	if errors.Is(err, errNotOurs) {
		return fmt.Errorf("release session %s: %w", l.sessionID, session.ErrNotHeld)
	}
	return err
}

func (l *Lock) release(ctx context.Context) error {
	first := false
	l.once.Do(func() {
		first = true
		l.stop()
		<-l.done
		l.db.mu.Lock()
		delete(l.db.locks, l)
		if l.db.held[l.sessionID] == l {
			delete(l.db.held, l.sessionID)
		}
		l.db.mu.Unlock()
		tag, err := l.db.pool.Exec(ctx, `DELETE FROM locks WHERE session_id = $1 AND fence = $2`, l.sessionID, l.fence)
		switch {
		case err != nil:
			// The row stays until its lease runs out.
			l.releaseErr = fmt.Errorf("release session %s: %w", l.sessionID, err)
		case tag.RowsAffected() == 0:
			l.releaseErr = errNotOurs
		}
	})
	if !first {
		return nil
	}
	return l.releaseErr
}

// refresh extends the lease until ctx is done or the lock is lost. A
// refresh that fails (the server is unreachable) is retried with backoff,
// from 100ms up to the usual interval, so a lock outlives an outage
// shorter than its lease; past the lease another host may take the
// session, which the fence then enforces.
func (l *Lock) refresh(ctx context.Context) {
	defer close(l.done)
	lease := l.db.opts.LockLease
	every := lease / 3
	retry := min(100*time.Millisecond, every)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tag, err := l.db.pool.Exec(ctx, `UPDATE locks SET expires_at = now() + $1 * interval '1 microsecond'
WHERE session_id = $2 AND fence = $3`, leaseArg(lease), l.sessionID, l.fence)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			l.db.log.Warn("refresh session lock", "session_id", l.sessionID, "err", err, "retry_in", retry)
			t.Reset(retry)
			retry = min(2*retry, every)
			continue
		case tag.RowsAffected() == 0:
			l.db.log.Warn("session lock lost", "session_id", l.sessionID)
			close(l.lost)
			return
		}
		retry = min(100*time.Millisecond, every)
		t.Reset(every)
	}
}

// Holders says who holds each of ids: the lock rows whose lease runs on
// the server's clock, less those of dead processes on this host (Lock
// would take them over).
func (s *Sessions) Holders(ctx context.Context, ids []string) (map[string]session.Holder, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("read session holders: %w", err)
	}
	out := make(map[string]session.Holder)
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT session_id, pid, host FROM locks WHERE session_id = ANY($1) AND expires_at > now()`, ids)
	if err != nil {
		return nil, fmt.Errorf("read session holders: %w", reach(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var h session.Holder
		if err := rows.Scan(&id, &h.PID, &h.Host); err != nil {
			return nil, fmt.Errorf("read session holders: %w", err)
		}
		if h.Host == db.opts.Host && !processAlive(h.PID) {
			continue
		}
		out[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read session holders: %w", reach(err))
	}
	return out, nil
}
