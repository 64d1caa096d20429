package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"meka.dev/meka/internal/rowcodec"
	"meka.dev/meka/session"
)

// ErrFenced is returned by an append under a lock that another holder
// has taken over since: the writer lost its lease (it stalled, or was cut
// off from the database) and must stop writing to the session. It wraps
// session.ErrNotHeld.
var ErrFenced = fmt.Errorf("session lock was taken over: %w", session.ErrNotHeld)

// Append writes rows in one transaction: their sequence numbers continue
// from the session's last row, every row gets the time of the append, the
// session's updated_at moves to it, and a session without a title takes
// the words of the first message a person typed.
//
// Appends are fenced. When this DB holds the session's lock, the append
// commits only while the lock row still carries that lock's fencing
// number; otherwise it fails with ErrFenced. When it does not, the append
// is refused with a *session.HeldError while another holder's lease is
// live. The lock row is read FOR SHARE, so a take-over waits for an
// append in flight and every append after it sees the new holder.
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
	turns := make([]int64, len(rows))
	kinds := make([]string, len(rows))
	payloads := make([]string, len(rows))
	var title string
	for i, r := range rows {
		if r.Entry == nil {
			return nil, fmt.Errorf("append rows to %s: row %d has no entry", sessionID, i)
		}
		kind, payload, err := rowcodec.Encode(r.Entry)
		if err != nil {
			return nil, fmt.Errorf("append rows to %s: %w", sessionID, err)
		}
		turns[i], kinds[i], payloads[i] = r.Turn, kind, string(payload)
		if title == "" {
			title = session.TitleOf(r.Entry)
		}
	}
	held := db.heldLock(sessionID)

	now := db.now()
	times := make([]time.Time, len(rows))
	for i, r := range rows {
		times[i] = now
		if keepTimes && !r.Time.IsZero() {
			times[i] = r.Time.UTC().Truncate(time.Microsecond)
		}
	}
	var first int64
	out := make([]session.Row, len(rows))
	fed := false
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// One round trip for the three statements; the transaction undoes
		// the last two when the guard refuses.
		b := &pgx.Batch{}
		b.Queue(`SELECT token, fence, pid, host, expires_at > now() FROM locks WHERE session_id = $1 FOR SHARE`, sessionID)
		b.Queue(`UPDATE sessions SET updated_at = $2, last_seq = last_seq + $3,
	title = CASE WHEN title = '' THEN $4 ELSE title END
WHERE id = $1 RETURNING last_seq - $3 + 1`, sessionID, now, len(rows), title)
		b.Queue(`INSERT INTO rows (session_id, seq, turn, kind, payload, time)
SELECT $1, s.last_seq - $2 + r.n, r.turn, r.kind, r.payload, r.time
FROM sessions s, unnest($3::bigint[], $4::text[], $5::text[], $6::timestamptz[]) WITH ORDINALITY AS r (turn, kind, payload, time, n)
WHERE s.id = $1`, sessionID, len(rows), turns, kinds, payloads, times)
		res := tx.SendBatch(ctx, b)
		defer res.Close()
		var cur lockRow
		var live bool
		err := res.QueryRow().Scan(&cur.token, &cur.fence, &cur.pid, &cur.host, &live)
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := fence(sessionID, held, cur, found, live); err != nil {
			return err
		}
		if err := res.QueryRow().Scan(&first); errors.Is(err, pgx.ErrNoRows) {
			return session.ErrNotFound
		} else if err != nil {
			return err
		}
		if _, err := res.Exec(); err != nil {
			return err
		}
		if err := res.Close(); err != nil {
			return err
		}
		for i, r := range rows {
			out[i] = session.Row{Seq: first + int64(i), Turn: r.Turn, Time: times[i], Entry: r.Entry}
		}
		if db.opts.Feed != nil {
			if entries := db.opts.Feed(sessionID, out); len(entries) > 0 {
				if _, err := db.insertFeed(ctx, tx, entries); err != nil {
					return err
				}
				fed = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("append rows to %s: %w", sessionID, reach(err))
	}
	if fed {
		db.feedChanged()
	}
	return out, nil
}

// lockRow is a session's lock as stored.
type lockRow struct {
	token string
	fence int64
	pid   int
	host  string
}

// fence decides whether an append may go on, given the lock this DB holds
// on the session (nil for none) and the lock row read (found, live).
func fence(sessionID string, held *Lock, cur lockRow, found, live bool) error {
	if held != nil {
		if !found || cur.token != held.holder.Token || cur.fence != held.fence {
			if found {
				return fmt.Errorf("%w (now held by meka pid %d on %s)", ErrFenced, cur.pid, cur.host)
			}
			return ErrFenced
		}
		return nil
	}
	if found && live {
		return heldBy(sessionID, session.Holder{PID: cur.pid, Host: cur.host})
	}
	return nil
}

// Rows returns a session's rows with Seq >= from, in order.
func (s *Sessions) Rows(ctx context.Context, sessionID string, from int64) ([]session.Row, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	rs, err := db.pool.Query(ctx, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = $1 AND seq >= $2 ORDER BY seq`, sessionID, from)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, reach(err))
	}
	out, err := scanRows(rs)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, reach(err))
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
	rs, err := db.pool.Query(ctx, `SELECT seq, turn, kind, payload, time FROM rows WHERE session_id = $1 ORDER BY seq DESC LIMIT $2`, sessionID, n)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, reach(err))
	}
	out, err := scanRows(rs)
	if err != nil {
		return nil, fmt.Errorf("read rows of %s: %w", sessionID, reach(err))
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
	if err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1)`, sessionID).Scan(&ok); err != nil {
		return fmt.Errorf("%s %s: %w", op, sessionID, err)
	}
	if !ok {
		return fmt.Errorf("%s %s: %w", op, sessionID, session.ErrNotFound)
	}
	return nil
}

// decodeBatch is how many rows one decoding goroutine takes.
const decodeBatch = 64

// stored is a row as read, before its entry is decoded.
type stored struct {
	kind    string
	payload []byte
}

// scanRows reads (seq, turn, kind, payload, time) rows and closes rs.
// Decoding is most of the cost of a long read, so it runs in batches on
// every CPU once the rows are in.
func scanRows(rs pgx.Rows) ([]session.Row, error) {
	defer rs.Close()
	var out []session.Row
	var raw []stored
	for rs.Next() {
		var r session.Row
		var st stored
		var at time.Time
		if err := rs.Scan(&r.Seq, &r.Turn, &st.kind, &st.payload, &at); err != nil {
			return nil, err
		}
		r.Time = at.UTC()
		out, raw = append(out, r), append(raw, st)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for lo := 0; lo < len(out); lo += decodeBatch {
		hi := min(lo+decodeBatch, len(out))
		g.Go(func() error {
			for i := lo; i < hi; i++ {
				e, err := rowcodec.Decode(raw[i].kind, raw[i].payload)
				if err != nil {
					return fmt.Errorf("decode row %d: %w", out[i].Seq, err)
				}
				out[i].Entry = e
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// Fork copies a session and its rows through turn throughTurn (all rows
// when throughTurn < 0) to a new top-level session with the same title,
// directories, profile, project and permission. Rows keep their sequence
// numbers and times.
func (s *Sessions) Fork(ctx context.Context, sessionID string, throughTurn int64) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("fork session: %w", err)
	}
	u, err := uuid.NewRandom()
	if err != nil {
		return session.Meta{}, fmt.Errorf("fork session %s: %w", sessionID, err)
	}
	var m session.Meta
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		m, err = scanMeta(tx.QueryRow(ctx, `SELECT `+metaColumns+` FROM sessions WHERE id = $1`, sessionID))
		if err != nil {
			return err
		}
		m.ID, m.ParentID, m.ParentCallID, m.Agent = u.String(), "", "", ""
		m.CreatedAt = db.now()
		m.UpdatedAt = m.CreatedAt
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(turn), 0), coalesce(max(seq), 0) FROM rows
WHERE session_id = $1 AND ($2 < 0 OR turn <= $2)`, sessionID, throughTurn).Scan(&m.ForkedAt, &last); err != nil {
			return err
		}
		dirs, err := encodeDirs(m.AdditionalDirs)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO sessions (id, title, cwd, additional_dirs, profile, project, permission, approvals, parent_id, forked_at, created_at, updated_at, last_seq)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, $9, $10, $11, $12)`,
			m.ID, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, m.ForkedAt, m.CreatedAt, m.UpdatedAt, last); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO rows (session_id, seq, turn, kind, payload, time)
SELECT $1, seq, turn, kind, payload, time FROM rows
WHERE session_id = $2 AND ($3 < 0 OR turn <= $3)`, m.ID, sessionID, throughTurn); err != nil {
			return fmt.Errorf("copy rows: %w", err)
		}
		return nil
	})
	if err != nil {
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
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// Lock the session's row first, as an append does, so the two
		// cannot interleave.
		tag, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = $2 WHERE id = $1`, sessionID, db.now())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return session.ErrNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM rows WHERE session_id = $1 AND turn > $2`, sessionID, keepThroughTurn); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE sessions SET last_seq = (SELECT coalesce(max(seq), 0) FROM rows WHERE session_id = $1) WHERE id = $1`, sessionID)
		return err
	})
	return wrapErr("rewind session "+sessionID, err)
}
