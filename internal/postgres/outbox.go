package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/storerec"
)

// Delivery is one event owed to one webhook endpoint.
type Delivery = storerec.Delivery

// Outbox is the database's webhook outbox, shared by every host: rows are
// copied from the feed past each endpoint's cursor, keyed by (endpoint,
// event), and a delivery is sent by whoever claims its lease.
type Outbox struct{ db *DB }

// Outbox returns the webhook outbox.
func (db *DB) Outbox() *Outbox { return &Outbox{db} }

// Fill copies up to limit feed events past endpoint's cursor whose type
// is in types ("*" for all) into the outbox, due at now, and moves the
// cursor. A new endpoint starts at the newest event. The cursor's row is
// locked, so hosts filling one endpoint at once take turns.
func (o *Outbox) Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error) {
	if err := o.db.checkOpen(); err != nil {
		return 0, fmt.Errorf("fill webhook outbox: %w", err)
	}
	var n int64
	err := o.db.inTx(ctx, func(tx pgx.Tx) error {
		var after int64
		var disabled bool
		err := tx.QueryRow(ctx, `SELECT after, disabled FROM webhook_cursors WHERE endpoint = $1 FOR UPDATE`, endpoint).Scan(&after, &disabled)
		if errors.Is(err, pgx.ErrNoRows) {
			_, err := tx.Exec(ctx, `INSERT INTO webhook_cursors (endpoint, after)
SELECT $1, coalesce(max(id), 0) FROM feed ON CONFLICT (endpoint) DO NOTHING`, endpoint)
			return err
		}
		if err != nil || disabled {
			return err
		}
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), $1) FROM (SELECT id FROM feed WHERE id > $1 ORDER BY id LIMIT $2) AS f`,
			after, limit).Scan(&last); err != nil {
			return err
		}
		if last == after {
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_outbox (endpoint, event_id, next_at)
SELECT $1, id, $2 FROM feed WHERE id > $3 AND id <= $4 AND ($5 OR type = ANY($6))
ON CONFLICT (endpoint, event_id) DO NOTHING`, endpoint, micro(now), after, last, containsAll(types), types)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE webhook_cursors SET after = $1 WHERE endpoint = $2 AND after < $1`, last, endpoint)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fill outbox: %w", reach(err))
	}
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
// statement (rows another host is claiming are skipped, not waited for),
// and returns them with their events.
func (o *Outbox) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]Delivery, error) {
	if err := o.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	rows, err := o.db.pool.Query(ctx, `WITH due AS (
	SELECT id FROM webhook_outbox
	WHERE status = 'pending' AND next_at <= $3 AND (lease_until IS NULL OR lease_until < $3)
	ORDER BY id LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE webhook_outbox o SET lease_owner = $1, lease_until = $2
FROM due, feed f WHERE o.id = due.id AND f.id = o.event_id
RETURNING o.id, o.endpoint, o.attempt, f.id, f.session_id, f.turn, f.type, f.data, f.time`,
		owner, micro(now.Add(lease)), micro(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", reach(err))
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var data string
		if err := rows.Scan(&d.ID, &d.Endpoint, &d.Attempt, &d.Event.ID, &d.Event.SessionID, &d.Event.Turn, &d.Event.Type, &data, &d.Event.Time); err != nil {
			return nil, fmt.Errorf("claim deliveries: %w", err)
		}
		d.Event.Data, d.Event.Time = json.RawMessage(data), d.Event.Time.UTC()
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", reach(err))
	}
	return out, nil
}

// Settle records a delivery's outcome if owner still holds it: status
// "delivered", "dead" or "disabled" ends it; "pending" retries it at next.
func (o *Outbox) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, lastError string) (bool, error) {
	if err := o.db.checkOpen(); err != nil {
		return false, fmt.Errorf("settle webhook delivery: %w", err)
	}
	tag, err := o.db.pool.Exec(ctx, `
UPDATE webhook_outbox SET status = $1, attempt = $2, next_at = $3, lease_owner = '', lease_until = NULL, last_error = $4
WHERE id = $5 AND lease_owner = $6`, status, attempt, micro(next), lastError, id, owner)
	if err != nil {
		return false, fmt.Errorf("settle delivery %d: %w", id, reach(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Disable ends every pending delivery of an endpoint that asked to be
// left alone (HTTP 410), and owes it nothing more.
func (o *Outbox) Disable(ctx context.Context, endpoint string) error {
	if err := o.db.checkOpen(); err != nil {
		return fmt.Errorf("disable webhook endpoint: %w", err)
	}
	err := o.db.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE webhook_outbox SET status = 'disabled', lease_owner = '' WHERE endpoint = $1 AND status = 'pending'`, endpoint); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_cursors SET disabled = true WHERE endpoint = $1`, endpoint)
		return err
	})
	return wrapErr("disable endpoint", reach(err))
}
