// Package sqlite is meka's embedded database: one SQLite file in the data
// directory, shared by every meka process of the user. It owns the schema
// and its migrations, the session store (sessions, their rows and their
// locks) and, later, the schedule store.
//
// It is the only package that imports a SQL driver (the pure-Go
// modernc.org/sqlite); it imports session and model from meka, nothing
// above them.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Defaults for Options.
const (
	DefaultLockLease   = 30 * time.Second
	DefaultBusyTimeout = 5 * time.Second
)

// ErrClosed is returned by a DB (and its stores) after Close.
var ErrClosed = errors.New("database is closed")

// Options configure Open. The zero value means defaults.
type Options struct {
	// Now is the clock for stored times and lock leases; nil means
	// time.Now.
	Now func() time.Time
	// Host and PID name this process as a lock holder; empty means
	// os.Hostname and os.Getpid.
	Host string
	PID  int
	// LockLease is how long a session lock lives without a refresh; a live
	// holder refreshes it every LockLease/3. Zero means DefaultLockLease.
	LockLease time.Duration
	// BusyTimeout is how long a statement waits for another process's
	// write lock before failing. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives warnings from background lock refreshes; nil
	// discards them.
	Logger *slog.Logger
	// Feed, when set, maps appended rows to feed events, stored in the
	// same transaction as the rows.
	Feed FeedOf
}

// DB is an open database file. It is safe for concurrent use, and several
// processes may open the same file.
type DB struct {
	path   string
	opts   Options
	log    *slog.Logger
	stmts  statements
	writer *sql.DB // one connection: in-process writers queue here rather than in SQLite's busy loop
	reader *sql.DB // several query-only connections; WAL lets them read while a write commits

	mu     sync.Mutex // guards closed and locks
	closed bool
	locks  map[*Lock]struct{} // held locks, released by Close

	feedMu sync.Mutex    // guards feedCh
	feedCh chan struct{} // closed at the next feed commit; nil when nobody waits
}

// Open opens (creating if needed) the database at path and migrates it to
// the current schema.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" || strings.Contains(path, "?") {
		return nil, fmt.Errorf("open database: invalid path %q", path)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
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
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	db := &DB{path: path, opts: opts, log: log, locks: make(map[*Lock]struct{})}
	busy := fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds())
	var err error
	// WAL lets readers (other processes' listings, a front door replaying
	// a session) run beside the writer. synchronous=NORMAL syncs at
	// checkpoints rather than at every commit: a crash of meka loses
	// nothing committed, a power cut may lose the last commits but never
	// corrupts the file, and an append costs a third of what FULL's fsync
	// per commit does.
	db.writer, err = sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {busy, "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)",
			// The kept WAL file (persistWAL) shrinks back to this after a
			// checkpoint, so a burst of writes does not hold disk.
			"journal_size_limit(4194304)"},
		// Write transactions take the write lock at BEGIN, so two processes
		// never deadlock upgrading a read lock; the busy timeout queues them.
		"_txlock": {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.writer.SetMaxOpenConns(1)
	db.writer.SetMaxIdleConns(1)
	db.writer.SetConnMaxLifetime(0)
	db.writer.SetConnMaxIdleTime(0)

	if err := retryBusy(ctx, opts.BusyTimeout, func() error { return migrate(ctx, db.writer, opts.Now) }); err != nil {
		db.writer.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}

	db.reader, err = sql.Open("sqlite", dsn(path, url.Values{
		"_pragma": {busy, "foreign_keys(1)", "query_only(1)"},
	}))
	if err != nil {
		db.writer.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	db.reader.SetMaxOpenConns(n)
	db.reader.SetMaxIdleConns(n)
	// The schema is current: the reader's connection (which parses it
	// again) starts now, beside the writer's own setup below.
	db.stmts.prepareReads(ctx, opts, db.reader)

	persistWAL(ctx, db.writer, log)
	leaveWAL(ctx, db.writer, log)
	if err := retryBusy(ctx, opts.BusyTimeout, func() error { return db.stmts.prepareWriter(ctx, db.writer) }); err != nil {
		db.stmts.close()
		db.reader.Close()
		db.writer.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return db, nil
}

// persistWAL keeps the WAL file when the writer, the last connection,
// closes: the next process's first write then reuses it rather than
// creating it and syncing the directory (a few milliseconds on a real
// disk, on the path of an editor's first session/new). leaveWAL keeps
// its content too. A driver that cannot is no error.
func persistWAL(ctx context.Context, writer *sql.DB, log *slog.Logger) {
	type persister interface {
		FileControlPersistWAL(dbName string, mode int) (int, error)
	}
	c, err := writer.Conn(ctx)
	if err == nil {
		err = c.Raw(func(dc any) error {
			if p, ok := dc.(persister); ok {
				_, err := p.FileControlPersistWAL("main", 1)
				return err
			}
			return nil
		})
		c.Close()
	}
	if err != nil {
		log.Debug("keep the WAL file", "err", err)
	}
}

// sqliteBusy is SQLITE_BUSY, the primary result code of every busy error.
const sqliteBusy = 5

// retryBusy runs f again while it fails with SQLITE_BUSY, for up to
// timeout. While a new file is being set up by several processes at once
// (one switching it to WAL, another checking for a hot journal) SQLite
// answers SQLITE_BUSY without consulting the busy handler; past setup,
// the busy timeout covers every wait.
func retryBusy(ctx context.Context, timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	wait := time.Millisecond
	for {
		err := f()
		if err == nil || sqliteCode(err)&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// dsn spells a plain file path with driver parameters. The path is passed
// to SQLite as is (not as a file: URI), so it needs no escaping; Open
// refuses the "?" that would end it early.
func dsn(path string, q url.Values) string { return path + "?" + q.Encode() }

// Path returns the file the database was opened from.
func (db *DB) Path() string { return db.path }

// Sessions returns the session store kept in db. Its Close closes db.
func (db *DB) Sessions() *Sessions { return &Sessions{db: db} }

// Close releases the session locks taken through db and closes the file.
// It is safe to call more than once.
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
	db.mu.Unlock()

	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), db.opts.BusyTimeout)
	defer cancel()
	for _, l := range held {
		if err := l.release(ctx); err != nil && !errors.Is(err, errNotOurs) {
			errs = append(errs, err)
		}
	}
	db.trimWAL(ctx)
	errs = append(errs, db.stmts.close(), db.reader.Close(), db.writer.Close())
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

// now returns the clock's time as stored: UTC, to the microsecond.
func (db *DB) now() time.Time { return fromMicro(toMicro(db.opts.Now())) }

// Times are stored as microseconds since the Unix epoch: integers keep the
// (updated_at, id) keyset exact and sort correctly, and microseconds are
// what PostgreSQL keeps, so both stores hand back the same times.
func toMicro(t time.Time) int64 { return t.UnixMicro() }

func fromMicro(us int64) time.Time { return time.UnixMicro(us).UTC() }
