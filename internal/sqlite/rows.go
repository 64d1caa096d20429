package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"meka.dev/meka/internal/rowcodec"
	"meka.dev/meka/session"
)

// encoded is a row's entry as stored.
type encoded struct {
	kind    string
	payload string
}

// Append writes rows in one transaction: their sequence numbers continue
// from the session's last row, every row gets the time of the append, the
// session's updated_at moves to it, and a session without a title takes
// the words of the first message a person typed (see session.TitleOf).
func (s *Sessions) Append(ctx context.Context, sessionID string, rows []session.Row) ([]session.Row, error) {
	return s.appendRows(ctx, sessionID, rows, false)
}

// Restore is Append keeping each row's time (session.Restorer), for an
// imported session.
func (s *Sessions) Restore(ctx context.Context, sessionID string, rows []session.Row) ([]session.Row, error) {
	return s.appendRows(ctx, sessionID, rows, true)
}

func (s *Sessions) appendRows(ctx context.Context, sessionID string, rows []session.Row, keepTimes bool) ([]session.Row, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("append rows: %w", err)
	}
	if len(rows) == 0 {
		return nil, s.mustExist(ctx, "append rows to", sessionID)
	}
	// Encode before the transaction, which holds the file's write lock.
	enc := make([]encoded, len(rows))
	var title string
	for i, r := range rows {
		if r.Entry == nil {
			return nil, fmt.Errorf("append rows to %s: row %d has no entry", sessionID, i)
		}
		kind, payload, err := rowcodec.Encode(r.Entry)
		if err != nil {
			return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
		}
		enc[i] = encoded{kind, string(payload)}
		if title == "" {
			title = session.TitleOf(r.Entry)
		}
	}

	// The insert statements this append uses, prepared before the
	// transaction takes the writer's one connection.
	var inserts [insertBatch]*sql.Stmt
	for lo := 0; lo < len(rows); lo += insertBatch {
		n := min(insertBatch, len(rows)-lo)
		if inserts[n-1] == nil {
			st, err := db.stmts.insertStmt(ctx, db.writer, n)
			if err != nil {
				return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
			}
			inserts[n-1] = st
		}
	}
	var feedInsert *sql.Stmt
	if db.opts.Feed != nil {
		var err error
		if feedInsert, err = db.stmts.feedStmt(ctx, db.writer); err != nil {
			return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
		}
	}
	now := db.now()
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
	}
	defer tx.Rollback()
	var current string
	var last int64
	err = tx.StmtContext(ctx, db.stmts.touch).QueryRowContext(ctx, toMicro(now), sessionID).Scan(&current, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("append rows to %s: %w", sessionID, session.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
	}
	out := make([]session.Row, len(rows))
	args := make([]any, 0, 6*min(len(rows), insertBatch))
	for lo := 0; lo < len(rows); lo += insertBatch {
		hi := min(lo+insertBatch, len(rows))
		args = args[:0]
		for i := lo; i < hi; i++ {
			seq := last + 1 + int64(i)
			at := now
			if keepTimes && !rows[i].Time.IsZero() {
				at = fromMicro(toMicro(rows[i].Time))
			}
			args = append(args, sessionID, seq, rows[i].Turn, enc[i].kind, enc[i].payload, toMicro(at))
			out[i] = session.Row{Seq: seq, Turn: rows[i].Turn, Time: at, Entry: rows[i].Entry}
		}
		if _, err := tx.StmtContext(ctx, inserts[hi-lo-1]).ExecContext(ctx, args...); err != nil {
			return nil, fmt.Errorf("append rows to %s: seq %d: %w", sessionID, last+1+int64(lo), err)
		}
	}
	if current == "" && title != "" {
		if _, err := tx.StmtContext(ctx, db.stmts.setTitle).ExecContext(ctx, title, sessionID); err != nil {
			return nil, fmt.Errorf("append rows to %s: set title: %w", sessionID, err)
		}
	}
	var fed bool
	if db.opts.Feed != nil {
		if entries := db.opts.Feed(sessionID, out); len(entries) > 0 {
			if _, err := db.insertFeed(ctx, tx, feedInsert, entries); err != nil {
				return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
			}
			fed = true
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
	}
	if fed {
		db.feedChanged()
	}
	return out, nil
}

// Rows returns a session's rows with Seq >= from, in order.
func (s *Sessions) Rows(ctx context.Context, sessionID string, from int64) ([]session.Row, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	rd, err := db.stmts.reading(ctx)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	rs, err := rd.rowsFrom.QueryContext(ctx, sessionID, from)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	out, err := scanRows(rs)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	if len(out) == 0 {
		return nil, s.mustExist(ctx, "read rows of", sessionID)
	}
	return out, nil
}

// Tail returns the last n rows of a session, in order.
func (s *Sessions) Tail(ctx context.Context, sessionID string, n int) ([]session.Row, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	if n <= 0 {
		return nil, s.mustExist(ctx, "read rows of", sessionID)
	}
	rd, err := db.stmts.reading(ctx)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	rs, err := rd.tail.QueryContext(ctx, sessionID, n)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	out, err := scanRows(rs)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, err)
	}
	if len(out) == 0 {
		return nil, s.mustExist(ctx, "read rows of", sessionID)
	}
	slices.Reverse(out)
	return out, nil
}

// mustExist tells an empty session from a missing one.
func (s *Sessions) mustExist(ctx context.Context, op, sessionID string) error {
	var ok bool
	rd, err := s.db.stmts.reading(ctx)
	if err == nil {
		err = rd.exists.QueryRowContext(ctx, sessionID).Scan(&ok)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, sessionID, err)
	}
	if !ok {
		return fmt.Errorf("%s %s: %w", op, sessionID, session.ErrNotFound)
	}
	return nil
}

// scanRows reads and decodes (seq, turn, kind, payload, time) rows and
// closes rs. Decoding is most of the cost of a long read, so full batches
// are decoded on other CPUs while the next ones are read; a short read is
// decoded in place.
func scanRows(rs *sql.Rows) ([]session.Row, error) {
	defer rs.Close()
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	var batches []*batch
	cur := &batch{}
	for rs.Next() {
		var r session.Row
		var kind string
		var payload []byte
		var at int64
		if err := rs.Scan(&r.Seq, &r.Turn, &kind, &payload, &at); err != nil {
			g.Wait()
			return nil, err
		}
		r.Time = fromMicro(at)
		cur.rows, cur.kinds, cur.payloads = append(cur.rows, r), append(cur.kinds, kind), append(cur.payloads, payload)
		if len(cur.rows) == decodeBatch {
			batches = append(batches, cur)
			g.Go(cur.decode)
			cur = &batch{}
		}
	}
	err := rs.Err()
	if err == nil && len(cur.rows) > 0 {
		batches = append(batches, cur)
		err = cur.decode()
	}
	if err := errors.Join(err, g.Wait()); err != nil {
		return nil, err
	}
	if len(batches) == 1 {
		return batches[0].rows, nil
	}
	out := make([]session.Row, 0, len(batches)*decodeBatch)
	for _, b := range batches {
		out = append(out, b.rows...)
	}
	return out, nil
}

// Fork copies a session and its rows through turn throughTurn (all rows
// when throughTurn < 0) to a new top-level session with the same title,
// directories, profile, project and permission. Rows keep their sequence
// numbers and times, so a compaction's KeptFrom still points at its row.
func (s *Sessions) Fork(ctx context.Context, sessionID string, throughTurn int64) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("fork session: %w", err)
	}
	u, err := uuid.NewRandom()
	if err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	defer tx.Rollback()
	m, err := scanMeta(tx.QueryRowContext(ctx, `SELECT `+metaColumns+` FROM sessions WHERE id = ?`, sessionID))
	if err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	m.ID, m.ParentID, m.ParentCallID, m.Agent = u.String(), "", "", ""
	m.CreatedAt = db.now()
	m.UpdatedAt = m.CreatedAt
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(turn), 0) FROM rows WHERE session_id = ?1 AND (?2 < 0 OR turn <= ?2)`,
		sessionID, throughTurn).Scan(&m.ForkedAt); err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	if _, err := tx.ExecContext(ctx, `
INSERT INTO sessions (id, title, cwd, additional_dirs, profile, project, permission, approvals, parent_id, forked_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
		m.ID, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, m.ForkedAt, toMicro(m.CreatedAt), toMicro(m.UpdatedAt)); err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	if _, err := tx.ExecContext(ctx, `
INSERT INTO rows (session_id, seq, turn, kind, payload, time)
SELECT ?1, seq, turn, kind, payload, time FROM rows
WHERE session_id = ?2 AND (?3 < 0 OR turn <= ?3)
ORDER BY seq`, m.ID, sessionID, throughTurn); err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: copy rows: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	return m, nil
}

// Rewind drops the rows of every turn after keepThroughTurn.
func (s *Sessions) Rewind(ctx context.Context, sessionID string, keepThroughTurn int64) error {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return fmt.Errorf("rewind session: %w", err)
	}
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("rewind session %s: %w", sessionID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET updated_at = ? WHERE id = ?`, toMicro(db.now()), sessionID)
	if err != nil {
		return fmt.Errorf("rewind session %s: %w", sessionID, err)
	}
	if err := affected(res, "rewind session "+sessionID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM rows WHERE session_id = ? AND turn > ?`, sessionID, keepThroughTurn); err != nil {
		return fmt.Errorf("rewind session %s: %w", sessionID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("rewind session %s: %w", sessionID, err)
	}
	return nil
}

// decodeBatch is how many rows one decoding goroutine takes at a time:
// enough that a goroutine costs little beside its JSON, few enough that a
// Tail of a couple hundred rows still spreads over the CPUs.
const decodeBatch = 64

// batch is rows read but not yet decoded.
type batch struct {
	rows     []session.Row
	kinds    []string
	payloads [][]byte
}

func (b *batch) decode() error {
	for i := range b.rows {
		e, err := rowcodec.Decode(b.kinds[i], b.payloads[i])
		if err != nil {
			return fmt.Errorf("seq %d: %w", b.rows[i].Seq, err)
		}
		b.rows[i].Entry = e
		b.payloads[i] = nil // done with it: let it go early
	}
	return nil
}
