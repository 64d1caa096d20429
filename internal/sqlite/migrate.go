package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrSchemaTooNew is returned by Open for a database that a newer meka has
// migrated past the versions this one knows.
var ErrSchemaTooNew = errors.New("database schema is newer than this meka")

// migration is one step of the schema. Steps are applied in order, each in
// its own transaction together with its entry in schema_version, and are
// never edited once released: a change is a new step at the end.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema's history. The schedule store appends its
// tables here.
var migrations = []migration{
	{1, "sessions", `
CREATE TABLE sessions (
	id              TEXT PRIMARY KEY,
	title           TEXT NOT NULL DEFAULT '',
	cwd             TEXT NOT NULL,
	additional_dirs TEXT NOT NULL DEFAULT '[]', -- JSON array of canonical paths
	profile         TEXT NOT NULL DEFAULT '',
	project         TEXT NOT NULL DEFAULT '',
	permission      TEXT NOT NULL DEFAULT '',
	parent_id       TEXT REFERENCES sessions (id) ON DELETE CASCADE,
	created_at      INTEGER NOT NULL, -- microseconds since the Unix epoch, as every time here
	updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_id);

CREATE TABLE rows (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	turn       INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	payload    TEXT NOT NULL, -- the entry's JSON, as session.EncodeEntry writes it
	time       INTEGER NOT NULL,
	PRIMARY KEY (session_id, seq)
) STRICT;

CREATE TABLE locks (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	pid        INTEGER NOT NULL,
	host       TEXT NOT NULL,
	token      TEXT NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
`},
	{2, "schedule", scheduleSchema}, // schedule.go
	{3, "fork point", `ALTER TABLE sessions ADD COLUMN forked_at INTEGER NOT NULL DEFAULT 0;`},
	{4, "approvals", `ALTER TABLE sessions ADD COLUMN approvals INTEGER NOT NULL DEFAULT 0;`},
	{5, "sub-agent call", `
ALTER TABLE sessions ADD COLUMN parent_call_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT '';`},
	{6, "feed", feedSchema},                    // feed.go
	{7, "webhook outbox", outboxSchema},        // outbox.go
	{8, "projects and memories", memorySchema}, // memory.go
	{9, "spend", spendSchema},                  // spend.go
	{10, "spend covering", spendCovering},      // spend.go
	{11, "browser logins", loginSchema},        // logins.go
	{12, "job isolation", `ALTER TABLE schedule_jobs ADD COLUMN isolation TEXT NOT NULL DEFAULT '';`},
}

// SchemaVersion is the version Open migrates a database to.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate brings the database up to the last migration. Several processes
// may open a new file at once: every write here is in a transaction that
// begins IMMEDIATE (waiting its turn under the busy timeout rather than
// failing to upgrade a read lock), and each step rereads the version
// inside its transaction, so a step runs exactly once.
func migrate(ctx context.Context, db *sql.DB, now func() time.Time) error {
	v, err := version(ctx, db)
	if err != nil {
		return err
	}
	// A newer meka may have added steps; refuse rather than write to a
	// schema this code does not understand.
	if v > SchemaVersion() {
		return fmt.Errorf("%w: version %d, this meka knows %d", ErrSchemaTooNew, v, SchemaVersion())
	}
	if v == SchemaVersion() {
		return nil
	}
	if err := inTx(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for _, m := range migrations {
		if m.version <= v {
			continue
		}
		if err := apply(ctx, db, m, now); err != nil {
			return err
		}
	}
	return nil
}

// version returns the last migration applied, 0 for a new file.
func version(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	err := db.QueryRowContext(ctx, `SELECT CASE
	WHEN EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version')
	THEN 1 ELSE 0 END`).Scan(&v)
	if err != nil || v == 0 {
		return 0, wrapErr("read schema version", err)
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// inTx runs f in a transaction, committing when it returns nil.
func inTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// apply runs one step and records it, unless another process did first.
func apply(ctx context.Context, db *sql.DB, m migration, now func() time.Time) error {
	err := inTx(ctx, db, func(tx *sql.Tx) error {
		var done bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM schema_version WHERE version = ?)`, m.version).Scan(&done); err != nil || done {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, toMicro(now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	return nil
}
