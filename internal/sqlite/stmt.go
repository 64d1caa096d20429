package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
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
	touch       *sql.Stmt              // bumps updated_at, returns the title and last seq; no row means no session
	insertRows  [insertBatch]*sql.Stmt // insertRows[n-1] inserts n rows
	setTitle    *sql.Stmt
	lockTake    *sql.Stmt // insert, or take over an expired lease or our own token
	lockSteal   *sql.Stmt // take over from one observed holder (whose process is dead)
	lockRefresh *sql.Stmt
	lockRelease *sql.Stmt

	// On the reader.
	prefix     *sql.Stmt
	rowsFrom   *sql.Stmt
	tail       *sql.Stmt
	exists     *sql.Stmt
	lockHolder *sql.Stmt
}

func (s *statements) prepare(ctx context.Context, writer, reader *sql.DB) error {
	for _, p := range []struct {
		dst   **sql.Stmt
		db    *sql.DB
		query string
	}{
		{&s.touch, writer, `UPDATE sessions SET updated_at = ?1 WHERE id = ?2
RETURNING title, (SELECT coalesce(max(seq), 0) FROM rows WHERE session_id = ?2)`},
		{&s.setTitle, writer, `UPDATE sessions SET title = ? WHERE id = ? AND title = ''`},
		{&s.lockTake, writer, `
INSERT INTO locks (session_id, pid, host, token, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (session_id) DO UPDATE
SET pid = excluded.pid, host = excluded.host, token = excluded.token, expires_at = excluded.expires_at
WHERE locks.expires_at <= ?6 OR locks.token = excluded.token`},
		{&s.lockSteal, writer, `
UPDATE locks SET pid = ?1, host = ?2, token = ?3, expires_at = ?4
WHERE session_id = ?5 AND token = ?6`},
		{&s.lockRefresh, writer, `UPDATE locks SET expires_at = ? WHERE session_id = ? AND token = ?`},
		{&s.lockRelease, writer, `DELETE FROM locks WHERE session_id = ? AND token = ?`},

		{&s.prefix, reader, `SELECT ` + metaColumns + ` FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 2`},
		{&s.rowsFrom, reader, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = ? AND seq >= ? ORDER BY seq`},
		{&s.tail, reader, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = ? ORDER BY seq DESC LIMIT ?`},
		{&s.exists, reader, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)`},
		{&s.lockHolder, reader, `SELECT pid, host, token, expires_at FROM locks WHERE session_id = ?`},
	} {
		if err := s.prepareOne(ctx, p.dst, p.db, p.query); err != nil {
			return err
		}
	}
	values := `(?, ?, ?, ?, ?, ?)`
	for n := range insertBatch {
		q := `INSERT INTO rows (session_id, seq, turn, kind, payload, time) VALUES ` + values + strings.Repeat(`, `+values, n)
		if err := s.prepareOne(ctx, &s.insertRows[n], writer, q); err != nil {
			return err
		}
	}
	return nil
}

func (s *statements) prepareOne(ctx context.Context, dst **sql.Stmt, db *sql.DB, query string) error {
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		s.close()
		return fmt.Errorf("prepare %q: %w", query, err)
	}
	*dst = st
	return nil
}

func (s *statements) close() error {
	var errs []error
	for _, st := range append([]*sql.Stmt{
		s.touch, s.setTitle, s.lockTake, s.lockSteal, s.lockRefresh, s.lockRelease,
		s.prefix, s.rowsFrom, s.tail, s.exists, s.lockHolder,
	}, s.insertRows[:]...) {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
