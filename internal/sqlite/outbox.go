package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"meka.dev/meka/internal/storerec"
)

// outboxSchema holds webhook deliveries. Rows are copied from the feed
// past each endpoint's cursor, keyed by (endpoint, event), so hosts that
// fill the outbox at once add each delivery once; a delivery is sent by
// whoever claims its lease, one conditional write.
const outboxSchema = `
CREATE TABLE webhook_cursors (
	endpoint TEXT PRIMARY KEY,
	after    INTEGER NOT NULL,
	disabled INTEGER NOT NULL DEFAULT 0 -- the endpoint answered 410 Gone
) STRICT;
CREATE TABLE webhook_outbox (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	endpoint    TEXT NOT NULL,
	event_id    INTEGER NOT NULL,
	attempt     INTEGER NOT NULL DEFAULT 0,
	next_at     INTEGER NOT NULL,
	lease_owner TEXT NOT NULL DEFAULT '',
	lease_until INTEGER NOT NULL DEFAULT 0,
	status      TEXT NOT NULL DEFAULT 'pending', -- pending, delivered, dead, disabled
	last_error  TEXT NOT NULL DEFAULT '',
	UNIQUE (endpoint, event_id)
) STRICT;
CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);
`

// Delivery is one event owed to one webhook endpoint.
type Delivery = storerec.Delivery

// Outbox is the database's webhook outbox.
type Outbox struct{ db *DB }

// Outbox returns the webhook outbox.
func (db *DB) Outbox() *Outbox { return &Outbox{db} }

// Fill copies up to limit feed events past endpoint's cursor whose type
// is in types ("*" for all) into the outbox, due at now, and moves the
// cursor. A new endpoint starts at the newest event: it is owed what
// happens from now on, not the history.
func (o *Outbox) Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error) {
	if err := o.db.checkOpen(); err != nil {
		return 0, fmt.Errorf("fill webhook outbox: %w", err)
	}
	tx, err := o.db.writer.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	defer tx.Rollback()
	var after int64
	var disabled bool
	err = tx.QueryRowContext(ctx, `SELECT after, disabled FROM webhook_cursors WHERE endpoint = ?`, endpoint).Scan(&after, &disabled)
	if err == sql.ErrNoRows {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM feed`).Scan(&after); err != nil {
			return 0, fmt.Errorf("fill outbox: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_cursors (endpoint, after) VALUES (?, ?)`, endpoint, after); err != nil {
			return 0, fmt.Errorf("fill outbox: %w", err)
		}
		return 0, tx.Commit()
	}
	if err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	if disabled {
		return 0, nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), ?) FROM (SELECT id FROM feed WHERE id > ? ORDER BY id LIMIT ?)`, after, after, limit).Scan(&last); err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	if last == after {
		return 0, nil
	}
	q := `INSERT OR IGNORE INTO webhook_outbox (endpoint, event_id, next_at) SELECT ?, id, ? FROM feed WHERE id > ? AND id <= ?`
	args := []any{endpoint, toMicro(now), after, last}
	if !containsAll(types) {
		q += ` AND type IN (` + strings.TrimSuffix(strings.Repeat("?,", len(types)), ",") + `)`
		for _, t := range types {
			args = append(args, t)
		}
	}
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_cursors SET after = ? WHERE endpoint = ? AND after < ?`, last, endpoint, last); err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("fill outbox: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

func containsAll(types []string) bool {
	for _, t := range types {
		if t == "*" {
			return true
		}
	}
	return len(types) == 0
}

// Claim leases up to limit due deliveries to owner until now+lease, in one
// statement, and returns them with their events.
func (o *Outbox) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	if err := o.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	rows, err := o.db.writer.QueryContext(ctx, `
UPDATE webhook_outbox SET lease_owner = ?, lease_until = ?
WHERE id IN (SELECT id FROM webhook_outbox WHERE status = 'pending' AND next_at <= ? AND lease_until < ? ORDER BY id LIMIT ?)
RETURNING id, endpoint, event_id, attempt`, owner, toMicro(now.Add(lease)), toMicro(now), toMicro(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.ID, &d.Endpoint, &d.Event.ID, &d.Attempt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim deliveries: %w", err)
		}
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	for i := range out {
		var data string
		var t int64
		err := o.db.reader.QueryRowContext(ctx, `SELECT session_id, turn, type, data, time FROM feed WHERE id = ?`, out[i].Event.ID).
			Scan(&out[i].Event.SessionID, &out[i].Event.Turn, &out[i].Event.Type, &data, &t)
		if err != nil {
			return nil, fmt.Errorf("claim deliveries: event %d: %w", out[i].Event.ID, err)
		}
		out[i].Event.Data, out[i].Event.Time = json.RawMessage(data), fromMicro(t)
	}
	return out, nil
}

// Settle records a delivery's outcome if owner still holds it: status
// "delivered", "dead" or "disabled" ends it; "pending" retries it at next.
func (o *Outbox) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error) {
	if err := o.db.checkOpen(); err != nil {
		return false, fmt.Errorf("settle webhook delivery: %w", err)
	}
	res, err := o.db.writer.ExecContext(ctx, `
UPDATE webhook_outbox SET status = ?, attempt = ?, next_at = ?, lease_owner = '', lease_until = 0, last_error = ?
WHERE id = ? AND lease_owner = ?`, status, attempt, toMicro(next), lastError, id, owner)
	if err != nil {
		return false, fmt.Errorf("settle delivery %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Disable ends every pending delivery of an endpoint that asked to be
// left alone (HTTP 410), and owes it nothing more.
func (o *Outbox) Disable(ctx context.Context, endpoint string) error {
	if err := o.db.checkOpen(); err != nil {
		return fmt.Errorf("disable webhook endpoint: %w", err)
	}
	tx, err := o.db.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_outbox SET status = 'disabled', lease_owner = '' WHERE endpoint = ? AND status = 'pending'`, endpoint); err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_cursors SET disabled = 1 WHERE endpoint = ?`, endpoint); err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("disable endpoint: %w", err)
	}
	return nil
}
