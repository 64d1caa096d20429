package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// feedSchema is the durable event feed: one row per event a live client
// may be sent, with a global, strictly increasing id. SQLite serialises
// writers, so commit order is id order.
const feedSchema = `
CREATE TABLE feed (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT NOT NULL DEFAULT '',
	turn       INTEGER NOT NULL DEFAULT 0,
	type       TEXT NOT NULL,
	data       TEXT NOT NULL, -- the event's JSON
	time       INTEGER NOT NULL
) STRICT;
CREATE INDEX feed_by_session ON feed (session_id, id);
`

// FeedEntry is an event to store in the feed.
type FeedEntry = storerec.FeedEntry

// FeedEvent is a stored event: an entry with its id and time.
type FeedEvent = storerec.FeedEvent

// FeedOf maps rows appended to a session to the feed events they cause;
// Options.Feed sets it, and Append stores its events in the transaction
// that stores the rows, so a row and its events commit together.
type FeedOf func(sessionID string, rows []session.Row) []FeedEntry

// Feed is the database's event feed.
type Feed struct{ db *DB }

// Feed returns the event feed.
func (db *DB) Feed() *Feed { return &Feed{db} }

// Append stores entries in one transaction and returns them stored.
func (f *Feed) Append(ctx context.Context, entries []FeedEntry) ([]FeedEvent, error) {
	if err := f.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("append feed: %w", err)
	}
	insert, err := f.db.stmts.feedStmt(ctx, f.db.writer)
	if err != nil {
		return nil, fmt.Errorf("append feed: %w", err)
	}
	tx, err := f.db.writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("append feed: %w", err)
	}
	defer tx.Rollback()
	out, err := f.db.insertFeed(ctx, tx, insert, entries)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("append feed: %w", err)
	}
	f.db.feedChanged()
	return out, nil
}

func (db *DB) insertFeed(ctx context.Context, tx *sql.Tx, insert *sql.Stmt, entries []FeedEntry) ([]FeedEvent, error) {
	now := db.now()
	out := make([]FeedEvent, 0, len(entries))
	st := tx.StmtContext(ctx, insert)
	for _, e := range entries {
		var id int64
		err := st.QueryRowContext(ctx, e.SessionID, e.Turn, e.Type, string(e.Data), toMicro(now)).Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("append feed %s: %w", e.Type, err)
		}
		out = append(out, FeedEvent{ID: id, FeedEntry: e, Time: now})
	}
	return out, nil
}

// After returns up to limit events with an id above after, oldest first;
// sessionID, when set, keeps that session's only.
func (f *Feed) After(ctx context.Context, after int64, sessionID string, limit int) ([]FeedEvent, error) {
	if sessionID != "" {
		return f.query(ctx, "read feed", `SELECT id, session_id, turn, type, data, time FROM feed WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`,
			sessionID, after, limit)
	}
	return f.query(ctx, "read feed", `SELECT id, session_id, turn, type, data, time FROM feed WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
}

// Before returns the newest events with an id below before, up to limit
// of them, oldest first; sessionID, when set, keeps that session's only.
// Paging back from the newest id plus one reads a feed tail first.
func (f *Feed) Before(ctx context.Context, before int64, sessionID string, limit int) ([]FeedEvent, error) {
	if sessionID != "" {
		return f.query(ctx, "read feed", `SELECT * FROM (SELECT id, session_id, turn, type, data, time FROM feed WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?) ORDER BY id`,
			sessionID, before, limit)
	}
	return f.query(ctx, "read feed", `SELECT * FROM (SELECT id, session_id, turn, type, data, time FROM feed WHERE id < ? ORDER BY id DESC LIMIT ?) ORDER BY id`, before, limit)
}

// Unfinished returns the turn.started events that no turn.completed of
// the same turn follows, oldest first: turns whose process stopped before
// it recorded their end (or that run now).
func (f *Feed) Unfinished(ctx context.Context) ([]FeedEvent, error) {
	return f.query(ctx, "read unfinished turns", `SELECT id, session_id, turn, type, data, time FROM feed s
WHERE s.type = 'turn.started' AND NOT EXISTS (SELECT 1 FROM feed c
	WHERE c.session_id = s.session_id AND c.id > s.id AND c.type = 'turn.completed'
	AND json_extract(c.data, '$.turn_id') = json_extract(s.data, '$.turn_id'))
ORDER BY s.id`)
}

// TurnEvents returns the turn.started and turn.completed events of one
// turn of a session, oldest first.
func (f *Feed) TurnEvents(ctx context.Context, sessionID, turnID string) ([]FeedEvent, error) {
	return f.query(ctx, "read turn", `SELECT id, session_id, turn, type, data, time FROM feed
WHERE session_id = ? AND type IN ('turn.started', 'turn.completed') AND json_extract(data, '$.turn_id') = ?
ORDER BY id`, sessionID, turnID)
}

func (f *Feed) query(ctx context.Context, what, q string, args ...any) ([]FeedEvent, error) {
	if err := f.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	rows, err := f.db.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []FeedEvent
	for rows.Next() {
		var e FeedEvent
		var data string
		var t int64
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Turn, &e.Type, &data, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		e.Data, e.Time = json.RawMessage(data), fromMicro(t)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Bounds returns the oldest and newest ids in the feed, 0 and 0 when it
// is empty.
func (f *Feed) Bounds(ctx context.Context) (oldest, newest int64, err error) {
	if err := f.db.checkOpen(); err != nil {
		return 0, 0, fmt.Errorf("read feed bounds: %w", err)
	}
	err = f.db.reader.QueryRowContext(ctx, `SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM feed`).Scan(&oldest, &newest)
	if err != nil {
		return 0, 0, fmt.Errorf("read feed bounds: %w", err)
	}
	return oldest, newest, nil
}

// Changed returns a channel closed at the next commit of feed events by
// this process; other processes' commits are seen by reading again.
func (f *Feed) Changed() <-chan struct{} {
	f.db.feedMu.Lock()
	defer f.db.feedMu.Unlock()
	if f.db.feedCh == nil {
		f.db.feedCh = make(chan struct{})
	}
	return f.db.feedCh
}

// feedChanged wakes the waiters of Changed.
func (db *DB) feedChanged() {
	db.feedMu.Lock()
	defer db.feedMu.Unlock()
	if db.feedCh != nil {
		close(db.feedCh)
		db.feedCh = nil
	}
}

// Prune deletes the events stored before before, oldest first up to the
// first one kept, and the webhook deliveries of the events deleted; the
// newest event always stays, so ids never restart and a cursor at it is
// not mistaken for one from another database. It returns how many events
// it deleted.
func (f *Feed) Prune(ctx context.Context, before time.Time) (int64, error) {
	if err := f.db.checkOpen(); err != nil {
		return 0, fmt.Errorf("prune feed: %w", err)
	}
	tx, err := f.db.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("prune feed: %w", err)
	}
	defer tx.Rollback()
	// The first event kept: a prefix goes, so what stays has no holes.
	var keep int64
	err = tx.QueryRowContext(ctx, `SELECT coalesce((SELECT id FROM feed WHERE time >= ? ORDER BY id LIMIT 1), (SELECT max(id) FROM feed), 0)`,
		toMicro(before)).Scan(&keep)
	if err != nil {
		return 0, fmt.Errorf("prune feed: %w", err)
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM feed WHERE id < ?`, keep)
	if err != nil {
		return 0, fmt.Errorf("prune feed: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_outbox WHERE event_id < ?`, keep); err != nil {
		return 0, fmt.Errorf("prune webhook deliveries: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("prune feed: %w", err)
	}
	return n, nil
}
