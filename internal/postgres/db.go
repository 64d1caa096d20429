// Package postgres is meka's shared database: one PostgreSQL database
// serving meka hosts on several machines. It is the second implementation
// of the session store (sessions, rows, locks) and of the schedule store,
// beside internal/sqlite, and passes the same conformance suites.
//
// Across machines nothing local can be trusted to agree, so the database
// decides: leases are read and written against the server's clock
// (now()), a session lock carries a fencing number that every append
// checks, and a claim of due jobs is one statement. Hosts are woken by
// LISTEN/NOTIFY when another host creates a job.
//
// It is the only package that imports pgx; it imports session and model
// from meka, nothing above them.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults for Options.
const (
	DefaultLockLease      = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
)

// ErrClosed is returned by a DB (and its stores) after Close.
var ErrClosed = errors.New("database is closed")

// Options configure Open. The zero value means defaults.
type Options struct {
	// Now is the clock for stored times (created, updated, row times);
	// nil means the database's clock as this process reads it (see
	// DB.Now). Leases never use it: they are compared with now() on the
	// server.
	Now func() time.Time
	// Host and PID name this process as a lock holder; empty means
	// os.Hostname and os.Getpid.
	Host string
	PID  int
	// LockLease is how long a session lock lives without a refresh; a live
	// holder refreshes it every LockLease/3. Zero means DefaultLockLease.
	LockLease time.Duration
	// ConnectTimeout bounds Open's wait for a server that is not up yet,
	// retried with backoff. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxConns bounds the pool; zero means pgxpool's default.
	MaxConns int32
	// Feed, when set, maps appended rows to feed events, stored in the
	// transaction that stores the rows.
	Feed FeedOf
	// Logger receives warnings from background work (lock refreshes,
	// the notification listener); nil discards them.
	Logger *slog.Logger
}

// DB is an open PostgreSQL database. It is safe for concurrent use, and
// processes on several machines may open the same database.
type DB struct {
	url  string
	opts Options
	log  *slog.Logger
	pool *pgxpool.Pool
	// skew is the server's clock minus ours, in nanoseconds, measured
	// once, at Open.
	skew atomic.Int64

	mu     sync.Mutex // guards closed, locks and listeners
	closed bool
	locks  map[*Lock]struct{} // held locks, released by Close
	held   map[string]*Lock   // session id → the lock this DB holds on it, which fences its appends
	stop   []func()           // stops the listeners

	feedMu sync.Mutex    // guards feedCh
	feedCh chan struct{} // closed at the next feed commit; nil when nobody waits
}

// Open connects to the database at url (a postgres:// URL or a libpq
// keyword string) and migrates it to the current schema. A server that
// refuses connections is retried with backoff for up to
// Options.ConnectTimeout.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	if opts.Host == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("open database: host name: %w", err)
		}
		opts.Host = h
	}
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	if opts.LockLease <= 0 {
		opts.LockLease = DefaultLockLease
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// The parse error repeats the URL, password included.
		return nil, errors.New("open database: invalid database url")
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// Statements are prepared and cached per connection (pgx's default),
	// so the hot paths skip parsing after a connection's first use.
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db := &DB{url: url, opts: opts, log: log, pool: pool,
		locks: make(map[*Lock]struct{}), held: make(map[string]*Lock)}
	if db.opts.Now == nil {
		db.opts.Now = db.Now
	}
	cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	if err := retry(cctx, func() error { return db.measureSkew(cctx) }); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// retry runs f until it succeeds, fails with something other than a
// connection error, or ctx ends, waiting longer after each failure.
func retry(ctx context.Context, f func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := f()
		if err == nil || !Transient(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ErrUnreachable wraps a failure to reach the database server (a refused
// or broken connection, a server shutting down). A write that fails with
// it stored nothing, unless the connection broke while its commit was in
// flight; the pool reconnects on the next call.
var ErrUnreachable = errors.New("the database server is unreachable")

// reach marks a connection failure as ErrUnreachable.
func reach(err error) error {
	if Transient(err) {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return err
}

// Transient reports whether err is the server being unreachable or going
// away (a refused or broken connection, a server shutting down) rather
// than a statement failing: the caller may retry once it is back.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08 is connection exceptions, 57P01-3 the server shutting
		// down or not yet accepting connections.
		return pe.Code[:2] == "08" || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, pgconn.ErrConnClosed) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// measureSkew reads the server's clock and keeps its offset from ours,
// taking the middle of the round trip as the moment it was read.
func (db *DB) measureSkew(ctx context.Context) error {
	before := time.Now()
	var server time.Time
	if err := db.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		return fmt.Errorf("read the server clock: %w", err)
	}
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	db.skew.Store(int64(server.Sub(mid)))
	return nil
}

// Now is the database server's clock as read here: this machine's clock
// corrected by the offset measured against the server. Hosts with skewed
// clocks agree on it to within a round trip, so a scheduler sharing the
// database uses it to decide what is due and when its leases run out.
func (db *DB) Now() time.Time {
	return time.Now().Add(time.Duration(db.skew.Load())).UTC().Truncate(time.Microsecond)
}

// now returns the store clock's time as stored: UTC, to the microsecond.
func (db *DB) now() time.Time { return micro(db.opts.Now()) }

func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Sessions returns the session store kept in db. Its Close closes db.
func (db *DB) Sessions() *Sessions { return &Sessions{db: db} }

// Ping checks that the server answers.
func (db *DB) Ping(ctx context.Context) error { return db.pool.Ping(ctx) }

// Close releases the session locks taken through db, stops its listeners
// and closes the pool. It is safe to call more than once.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	held := make([]*Lock, 0, len(db.locks))
	for l := range db.locks {
		held = append(held, l)
	}
	stops := db.stop
	db.stop = nil
	db.mu.Unlock()

	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range held {
		if err := l.release(ctx); err != nil && !errors.Is(err, errNotOurs) {
			errs = append(errs, err)
		}
	}
	for _, stop := range stops {
		stop()
	}
	db.pool.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// checkOpen fails with ErrClosed once Close has begun.
func (db *DB) checkOpen() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	return nil
}

// inTx runs f in a transaction, committing when it returns nil.
func (db *DB) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	return tx.Commit(ctx)
}

// pgCode returns the SQLSTATE of a server error, "" for anything else.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATEs the stores map to their errors.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
)

// wrapErr prefixes err with op, keeping nil nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
