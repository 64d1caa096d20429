package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// feedLock is the advisory lock key that serializes feed writers ("feed"
// in ASCII). A reader pages the feed by id, so ids must commit in order:
// a writer takes its ids and commits while it holds the lock, and the
// next one takes larger ids after that commit, as SQLite's single writer
// does.
const feedLock = 0x66656564

// FeedEntry is an event to store in the feed.
type FeedEntry = storerec.FeedEntry

// FeedEvent is a stored event: an entry with its id and time.
type FeedEvent = storerec.FeedEvent

// FeedOf maps rows appended to a session to the feed events they cause;
// Options.Feed sets it, and Append stores its events in the transaction
// that stores the rows, so a row and its events commit together.
type FeedOf func(sessionID string, rows []session.Row) []FeedEntry

// Feed is the database's durable event feed, shared by every host.
type Feed struct{ db *DB }

// Feed returns the event feed.
func (db *DB) Feed() *Feed { return &Feed{db} }

// Append stores entries in one transaction and returns them stored.
func (f *Feed) Append(ctx context.Context, entries []FeedEntry) ([]FeedEvent, error) {
	if err := f.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("append feed: %w", err)
	}
	var out []FeedEvent
	err := f.db.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = f.db.insertFeed(ctx, tx, entries)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append feed: %w", reach(err))
	}
	f.db.feedChanged()
	return out, nil
}

// insertFeed stores entries in tx, under the feed's lock.
func (db *DB) insertFeed(ctx context.Context, tx pgx.Tx, entries []FeedEntry) ([]FeedEvent, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	now := db.now()
	b := &pgx.Batch{}
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, feedLock)
	for _, e := range entries {
		b.Queue(`INSERT INTO feed (session_id, turn, type, data, time) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			e.SessionID, e.Turn, e.Type, string(e.Data), now)
	}
	res := tx.SendBatch(ctx, b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return nil, fmt.Errorf("lock feed: %w", err)
	}
	out := make([]FeedEvent, 0, len(entries))
	for _, e := range entries {
		var id int64
		if err := res.QueryRow().Scan(&id); err != nil {
			return nil, fmt.Errorf("append feed %s: %w", e.Type, err)
		}
		out = append(out, FeedEvent{ID: id, FeedEntry: e, Time: now})
	}
	return out, res.Close()
}

// After returns up to limit events with an id above after, oldest first;
// sessionID, when set, keeps that session's only.
func (f *Feed) After(ctx context.Context, after int64, sessionID string, limit int) ([]FeedEvent, error) {
	if sessionID != "" {
		return f.query(ctx, "read feed", `SELECT id, session_id, turn, type, data, time FROM feed WHERE session_id = $3 AND id > $1 ORDER BY id LIMIT $2`,
			after, limit, sessionID)
	}
	return f.query(ctx, "read feed", `SELECT id, session_id, turn, type, data, time FROM feed WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
}

// Before returns the newest events with an id below before, up to limit
// of them, oldest first; sessionID, when set, keeps that session's only.
// Paging back from the newest id plus one reads a feed tail first.
func (f *Feed) Before(ctx context.Context, before int64, sessionID string, limit int) ([]FeedEvent, error) {
	if sessionID != "" {
		return f.query(ctx, "read feed", `SELECT * FROM (SELECT id, session_id, turn, type, data, time FROM feed WHERE session_id = $3 AND id < $1 ORDER BY id DESC LIMIT $2) newest ORDER BY id`,
			before, limit, sessionID)
	}
	return f.query(ctx, "read feed", `SELECT * FROM (SELECT id, session_id, turn, type, data, time FROM feed WHERE id < $1 ORDER BY id DESC LIMIT $2) newest ORDER BY id`, before, limit)
}

// Unfinished returns the turn.started events that no turn.completed of
// the same turn follows, oldest first: turns whose process stopped before
// it recorded their end (or that run now).
func (f *Feed) Unfinished(ctx context.Context) ([]FeedEvent, error) {
	return f.query(ctx, "read unfinished turns", `SELECT id, session_id, turn, type, data, time FROM feed s
WHERE s.type = 'turn.started' AND NOT EXISTS (SELECT 1 FROM feed c
	WHERE c.session_id = s.session_id AND c.id > s.id AND c.type = 'turn.completed'
	AND c.data::jsonb->>'turn_id' = s.data::jsonb->>'turn_id')
ORDER BY s.id`)
}

// TurnEvents returns the turn.started and turn.completed events of one
// turn of a session, oldest first.
func (f *Feed) TurnEvents(ctx context.Context, sessionID, turnID string) ([]FeedEvent, error) {
	return f.query(ctx, "read turn", `SELECT id, session_id, turn, type, data, time FROM feed
WHERE session_id = $1 AND type IN ('turn.started', 'turn.completed') AND data::jsonb->>'turn_id' = $2
ORDER BY id`, sessionID, turnID)
}

func (f *Feed) query(ctx context.Context, what, q string, args ...any) ([]FeedEvent, error) {
	if err := f.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	rows, err := f.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, reach(err))
	}
	defer rows.Close()
	var out []FeedEvent
	for rows.Next() {
		var e FeedEvent
		var data string
		if err := rows.Scan(&e.ID, &e.SessionID, &e.Turn, &e.Type, &data, &e.Time); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		e.Data, e.Time = json.RawMessage(data), e.Time.UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, reach(err))
	}
	return out, nil
}

// Bounds returns the oldest and newest ids in the feed, 0 and 0 when it
// is empty.
func (f *Feed) Bounds(ctx context.Context) (oldest, newest int64, err error) {
	if err := f.db.checkOpen(); err != nil {
		return 0, 0, fmt.Errorf("read feed bounds: %w", err)
	}
	err = f.db.pool.QueryRow(ctx, `SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM feed`).Scan(&oldest, &newest)
	if err != nil {
		return 0, 0, fmt.Errorf("read feed bounds: %w", reach(err))
	}
	return oldest, newest, nil
}

// Changed returns a channel closed at the next commit of feed events by
// this process; other hosts' commits are seen by reading again.
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
	var n int64
	err := f.db.inTx(ctx, func(tx pgx.Tx) error {
		// The first event kept: a prefix goes, so what stays has no holes.
		var keep int64
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT id FROM feed WHERE time >= $1 ORDER BY id LIMIT 1), (SELECT max(id) FROM feed), 0)`,
			before).Scan(&keep); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM feed WHERE id < $1`, keep)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `DELETE FROM webhook_outbox WHERE event_id < $1`, keep)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune feed: %w", reach(err))
	}
	return n, nil
}
