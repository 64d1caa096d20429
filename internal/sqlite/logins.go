package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// loginSchema holds the web app's browser sessions: the SHA-256 of each
// session cookie and its expiry, never the cookie, so that a restart of
// meka serve signs no browser out and a copy of the database signs none
// in.
const loginSchema = `
CREATE TABLE browser_logins (
	hash       BLOB PRIMARY KEY,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX browser_logins_by_expiry ON browser_logins (expires_at);
`

// Logins is the database's store of browser sessions.
type Logins struct{ db *DB }

// Logins returns the browser sessions' store.
func (db *DB) Logins() *Logins { return &Logins{db} }

// SaveLogin records a session's cookie hash and expiry.
func (l *Logins) SaveLogin(ctx context.Context, hash []byte, expires time.Time) error {
	if err := l.db.checkOpen(); err != nil {
		return fmt.Errorf("save login: %w", err)
	}
	if _, err := l.db.writer.ExecContext(ctx, `INSERT INTO browser_logins (hash, expires_at) VALUES (?, ?)
	ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at`, hash, toMicro(expires)); err != nil {
		return fmt.Errorf("save login: %w", err)
	}
	return nil
}

// LoginExpiry returns the expiry recorded under hash.
func (l *Logins) LoginExpiry(ctx context.Context, hash []byte) (time.Time, bool, error) {
	if err := l.db.checkOpen(); err != nil {
		return time.Time{}, false, fmt.Errorf("read login: %w", err)
	}
	var us int64
	err := l.db.reader.QueryRowContext(ctx, `SELECT expires_at FROM browser_logins WHERE hash = ?`, hash).Scan(&us)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read login: %w", err)
	}
	return fromMicro(us), true, nil
}

// DeleteLogin forgets a session.
func (l *Logins) DeleteLogin(ctx context.Context, hash []byte) error {
	if err := l.db.checkOpen(); err != nil {
		return fmt.Errorf("delete login: %w", err)
	}
	if _, err := l.db.writer.ExecContext(ctx, `DELETE FROM browser_logins WHERE hash = ?`, hash); err != nil {
		return fmt.Errorf("delete login: %w", err)
	}
	return nil
}

// PruneLogins deletes the sessions expired at now.
func (l *Logins) PruneLogins(ctx context.Context, now time.Time) (int64, error) {
	if err := l.db.checkOpen(); err != nil {
		return 0, fmt.Errorf("prune logins: %w", err)
	}
	res, err := l.db.writer.ExecContext(ctx, `DELETE FROM browser_logins WHERE expires_at <= ?`, toMicro(now))
	if err != nil {
		return 0, fmt.Errorf("prune logins: %w", err)
	}
	return res.RowsAffected()
}
