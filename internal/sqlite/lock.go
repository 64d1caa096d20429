package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/session"
)

// errNotOurs reports a release that found the lock row taken over.
var errNotOurs = errors.New("lock row is not ours")

// takeAttempts bounds the read-then-retry rounds of one Lock call, for a
// lock that keeps changing hands while we look at it.
const takeAttempts = 3

// Lock takes a session for writing. The lock is a row in the database, so
// it holds across processes and, given a shared database, across hosts.
//
// It is taken by one conditional write that succeeds when nobody holds the
// session, when the holder's lease has expired, or when the holder has the
// caller's token. Failing that, a holder on this host whose process is gone
// is taken over by a compare-and-swap on its token, so two processes that
// both find it dead cannot both win. Anyone else is reported as a
// *session.HeldError.
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
	if err := db.takeLock(ctx, sessionID, h); err != nil {
		return nil, err
	}

	ctx, stop := context.WithCancel(context.Background())
	l := &Lock{db: db, sessionID: sessionID, holder: h, stop: stop, done: make(chan struct{}), lost: make(chan struct{})}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		stop()
		db.stmts.lockRelease.ExecContext(context.Background(), sessionID, h.Token)
		return nil, fmt.Errorf("lock session %s: %w", sessionID, ErrClosed)
	}
	db.locks[l] = struct{}{}
	go l.refresh(ctx)
	return l, nil
}

// takeLock writes h as the holder of the session, or says who holds it.
func (db *DB) takeLock(ctx context.Context, sessionID string, h session.Holder) error {
	now := db.now()
	expires := toMicro(now.Add(db.opts.LockLease))
	var cur session.Holder
	for range takeAttempts {
		res, err := db.stmts.lockTake.ExecContext(ctx, sessionID, h.PID, h.Host, h.Token, expires, toMicro(now))
		if sqliteCode(err) == sqliteConstraintForeignKey {
			return fmt.Errorf("lock session %s: %w", sessionID, session.ErrNotFound)
		}
		if ok, err := wrote(res, err); err != nil || ok {
			return wrapErr("lock session "+sessionID, err)
		}

		var until int64
		rd, err := db.stmts.reading(ctx)
		if err == nil {
			err = rd.lockHolder.QueryRowContext(ctx, sessionID).Scan(&cur.PID, &cur.Host, &cur.Token, &until)
		}
		if errors.Is(err, sql.ErrNoRows) {
			continue // released since: try again
		}
		if err != nil {
			return fmt.Errorf("lock session %s: %w", sessionID, err)
		}
		if cur.Host != db.opts.Host || processAlive(cur.PID) {
			return heldBy(sessionID, cur)
		}
		res, err = db.stmts.lockSteal.ExecContext(ctx, h.PID, h.Host, h.Token, expires, sessionID, cur.Token)
		if ok, err := wrote(res, err); err != nil || ok {
			return wrapErr("lock session "+sessionID, err)
		}
		// Someone else took it over first; look again.
	}
	return heldBy(sessionID, cur)
}

// heldBy reports the holder without its token: the token is what lets a
// holder take its own lock back, so it is not handed to others.
func heldBy(sessionID string, h session.Holder) error {
	return &session.HeldError{SessionID: sessionID, Holder: session.Holder{PID: h.PID, Host: h.Host}}
}

// wrote reports whether a conditional write changed a row.
func wrote(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Lock is a held session lock. A goroutine it owns refreshes the lease
// every LockLease/3 until Release, which stops and waits for it.
type Lock struct {
	db        *DB
	sessionID string
	holder    session.Holder
	stop      context.CancelFunc
	done      chan struct{} // closed when the refresher has returned
	lost      chan struct{} // closed when a refresh finds the lock taken over

	once       sync.Once // releases once; concurrent callers wait for it
	releaseErr error
}

var _ session.Lock = (*Lock)(nil)

// Holder returns the holder recorded in the database.
func (l *Lock) Holder() session.Holder { return l.holder }

// Lost is closed when a refresh finds that another holder took the
// session over (this process stalled past its lease) or that the session
// was deleted. The holder should stop writing to the session.
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
		l.db.mu.Unlock()
		res, err := l.db.stmts.lockRelease.ExecContext(ctx, l.sessionID, l.holder.Token)
		ok, err := wrote(res, err)
		switch {
		case err != nil:
			// The row stays until its lease runs out.
			l.releaseErr = fmt.Errorf("release session %s: %w", l.sessionID, err)
		case !ok:
			l.releaseErr = errNotOurs
		}
	})
	if !first {
		return nil
	}
	return l.releaseErr
}

// refresh extends the lease until ctx is done or the lock is lost.
func (l *Lock) refresh(ctx context.Context) {
	defer close(l.done)
	lease := l.db.opts.LockLease
	t := time.NewTicker(lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := l.db.stmts.lockRefresh.ExecContext(ctx, toMicro(l.db.now().Add(lease)), l.sessionID, l.holder.Token)
		ok, err := wrote(res, err)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// Try again at the next tick; the lease has two more in it.
			l.db.log.Warn("refresh session lock", "session_id", l.sessionID, "err", err)
		case !ok:
			l.db.log.Warn("session lock lost", "session_id", l.sessionID)
			close(l.lost)
			return
		}
	}
}

// Holders says who holds each of ids: the lock rows whose lease runs,
// less those of dead processes on this host (Lock would take them over).
func (s *Sessions) Holders(ctx context.Context, ids []string) (map[string]session.Holder, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("read session holders: %w", err)
	}
	out := make(map[string]session.Holder)
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("read session holders: %w", err)
	}
	rows, err := db.reader.QueryContext(ctx, `SELECT session_id, pid, host FROM locks
WHERE session_id IN (SELECT value FROM json_each(?)) AND expires_at > ?`, string(list), toMicro(db.now()))
	if err != nil {
		return nil, fmt.Errorf("read session holders: %w", err)
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
		return nil, fmt.Errorf("read session holders: %w", err)
	}
	return out, nil
}
