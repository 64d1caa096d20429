package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// insertBatch is the most rows one INSERT statement writes; Append writes
// a longer list in several. A model round is an assistant message and its
// tool results, so this covers all but the widest rounds in one statement.
const insertBatch = 8

// metaColumns are the columns scanMeta reads, in order.
const metaColumns = `id, title, cwd, additional_dirs, profile, project, permission, coalesce(parent_id, ''), parent_call_id, agent, forked_at, approvals, created_at, updated_at`

// statements are prepared once per pool: the writer pool has a single
// connection, so each of its statements is compiled exactly once, and the
// hot paths (Append, Rows, Tail, Get, lock refreshes) skip SQL parsing.
type statements struct {
	// On the writer.
	touch *sql.Stmt // bumps updated_at, returns the title and last seq; no row means no session
	// insertRows[n-1] inserts n rows, prepared at its first use
	// (insertStmt): a process that appends only a few rows at a time
	// compiles only those.
	insertMu    sync.Mutex // guards insertRows and insertFeed
	insertRows  [insertBatch]*sql.Stmt
	insertFeed  *sql.Stmt // prepared at its first use (feedStmt)
	setTitle    *sql.Stmt
	lockTake    *sql.Stmt // insert, or take over an expired lease or our own token
	lockSteal   *sql.Stmt // take over from one observed holder (whose process is dead)
	lockRefresh *sql.Stmt
	lockRelease *sql.Stmt

	// On the reader, prepared at their first use (listStmt): a session's
	// jobs and a scope's memories, listed for every model request (the
	// [Scheduled] and [Memories] parts). Not with the reader's others,
	// which a session's first reads wait for.
	listMu   sync.Mutex // guards jobsOf and memories
	jobsOf   *sql.Stmt
	memories *sql.Stmt

	// On the reader, prepared in the background (prepareReader): read
	// through reading, which waits for them.
	rd      readStatements
	rdReady chan struct{} // closed once rd and rdErr are set
	rdErr   error
}

// readStatements are the reader's statements.
type readStatements struct {
	prefix     *sql.Stmt
	rowsFrom   *sql.Stmt
	tail       *sql.Stmt
	exists     *sql.Stmt
	lockHolder *sql.Stmt
}

// reading returns the reader's statements once they are prepared.
func (s *statements) reading(ctx context.Context) (*readStatements, error) {
	select {
	case <-s.rdReady:
		if s.rdErr != nil {
			return nil, s.rdErr
		}
		return &s.rd, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// prepareReads prepares the reader's statements in the background: a new
// reader connection parses the schema before its first statement, a
// millisecond and more that a starting process (an editor's first
// session/new, a one-shot) spends on the other core while it sets up the
// writer and creates its session, whose first read comes after its first
// write.
func (s *statements) prepareReads(ctx context.Context, opts Options, reader *sql.DB) {
	s.rdReady = make(chan struct{})
	go func() {
		defer close(s.rdReady)
		// Not the caller's context: Open returns before this is done.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.BusyTimeout)
		defer cancel()
		if err := retryBusy(ctx, opts.BusyTimeout, func() error { return s.prepareReader(ctx, reader) }); err != nil {
			s.rdErr = fmt.Errorf("prepare reads: %w", err)
		}
	}()
}

func (s *statements) prepareWriter(ctx context.Context, writer *sql.DB) error {
	if err := s.prepareAll(ctx, writer, []prepared{
		{&s.touch, `UPDATE sessions SET updated_at = ?1 WHERE id = ?2
RETURNING title, (SELECT coalesce(max(seq), 0) FROM rows WHERE session_id = ?2)`},
		{&s.setTitle, `UPDATE sessions SET title = ? WHERE id = ? AND title = ''`},
		{&s.lockTake, `
INSERT INTO locks (session_id, pid, host, token, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (session_id) DO UPDATE
SET pid = excluded.pid, host = excluded.host, token = excluded.token, expires_at = excluded.expires_at
WHERE locks.expires_at <= ?6 OR locks.token = excluded.token`},
		{&s.lockSteal, `
UPDATE locks SET pid = ?1, host = ?2, token = ?3, expires_at = ?4
WHERE session_id = ?5 AND token = ?6`},
		{&s.lockRefresh, `UPDATE locks SET expires_at = ? WHERE session_id = ? AND token = ?`},
		{&s.lockRelease, `DELETE FROM locks WHERE session_id = ? AND token = ?`},
	}); err != nil {
		return err
	}
	return nil
}

// insertStmt returns the statement inserting n rows (1 <= n <=
// insertBatch), preparing it on the writer the first time. It must not be
// called inside a write transaction: the writer's one connection is the
// transaction's.
func (s *statements) insertStmt(ctx context.Context, writer *sql.DB, n int) (*sql.Stmt, error) {
	s.insertMu.Lock()
	defer s.insertMu.Unlock()
	if st := s.insertRows[n-1]; st != nil {
		return st, nil
	}
	values := `(?, ?, ?, ?, ?, ?)`
	q := `INSERT INTO rows (session_id, seq, turn, kind, payload, time) VALUES ` + values + strings.Repeat(`, `+values, n-1)
	if err := prepareOne(ctx, &s.insertRows[n-1], writer, q); err != nil {
		return nil, err
	}
	return s.insertRows[n-1], nil
}

// feedStmt returns the statement inserting one feed event, preparing it
// on the writer the first time: a session's appends store an event or two
// each, and each would otherwise parse the INSERT again. Like insertStmt,
// it must not be called inside a write transaction.
func (s *statements) feedStmt(ctx context.Context, writer *sql.DB) (*sql.Stmt, error) {
	s.insertMu.Lock()
	defer s.insertMu.Unlock()
	if err := prepareOne(ctx, &s.insertFeed, writer,
		`INSERT INTO feed (session_id, turn, type, data, time) VALUES (?, ?, ?, ?, ?) RETURNING id`); err != nil {
		return nil, err
	}
	return s.insertFeed, nil
}

// jobsOfStmt lists a session's jobs.
func (s *statements) jobsOfStmt(ctx context.Context, reader *sql.DB) (*sql.Stmt, error) {
	return s.listStmt(ctx, reader, &s.jobsOf, `SELECT `+jobColumns+` FROM schedule_jobs WHERE session_id = ? ORDER BY next_at, id`)
}

// memoriesStmt lists a scope's memories, newest first, up to a limit.
func (s *statements) memoriesStmt(ctx context.Context, reader *sql.DB) (*sql.Stmt, error) {
	return s.listStmt(ctx, reader, &s.memories, `SELECT `+memoryColumns+` FROM memories WHERE project = ? ORDER BY updated_at DESC, id DESC LIMIT ?`)
}

func (s *statements) listStmt(ctx context.Context, reader *sql.DB, dst **sql.Stmt, query string) (*sql.Stmt, error) {
	s.listMu.Lock()
	defer s.listMu.Unlock()
	if err := prepareOne(ctx, dst, reader, query); err != nil {
		return nil, err
	}
	return *dst, nil
}

func (s *statements) prepareReader(ctx context.Context, reader *sql.DB) error {
	r := &s.rd
	return s.prepareAll(ctx, reader, []prepared{
		{&r.prefix, `SELECT ` + metaColumns + ` FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 2`},
		{&r.rowsFrom, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = ? AND seq >= ? ORDER BY seq`},
		{&r.tail, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = ? ORDER BY seq DESC LIMIT ?`},
		{&r.exists, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`},
		{&r.lockHolder, `SELECT pid, host, token, expires_at FROM locks WHERE session_id = ?`},
	})
}

type prepared struct {
	dst   **sql.Stmt
	query string
}

func (s *statements) prepareAll(ctx context.Context, db *sql.DB, ps []prepared) error {
	for _, p := range ps {
		if err := prepareOne(ctx, p.dst, db, p.query); err != nil {
			return err
		}
	}
	return nil
}

func prepareOne(ctx context.Context, dst **sql.Stmt, db *sql.DB, query string) error {
	if *dst != nil { // prepared by an earlier attempt (retryBusy)
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return fmt.Errorf("prepare %q: %w", query, err)
	}
	*dst = st
	return nil
}

// close closes the statements, once the reader's are settled.
func (s *statements) close() error {
	if s.rdReady != nil {
		<-s.rdReady
	}
	var errs []error
	r := &s.rd
	s.insertMu.Lock()
	defer s.insertMu.Unlock()
	s.listMu.Lock()
	defer s.listMu.Unlock()
	for _, st := range append([]*sql.Stmt{
		s.touch, s.setTitle, s.lockTake, s.lockSteal, s.lockRefresh, s.lockRelease, s.insertFeed,
		r.prefix, r.rowsFrom, r.tail, r.exists, r.lockHolder, s.jobsOf, s.memories,
	}, s.insertRows[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
