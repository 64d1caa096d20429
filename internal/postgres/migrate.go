package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew is returned by Open for a database that a newer meka has
// migrated past the versions this one knows.
var ErrSchemaTooNew = errors.New("database schema is newer than this meka")

// migration is one step of the schema. Steps are applied in order, each in
// its own transaction together with its entry in schema_version, and are
// never edited once released: a change is a new step at the end.
//
// The steps mirror internal/sqlite's, version for version, so that the
// two schemas can be compared step by step and `meka migrate` copies
// between them column for column. Times are timestamptz here (the server
// keeps microseconds, as SQLite's integers do); a few columns exist only
// here because the server needs them: sessions.last_seq and locks.fence.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "sessions", `
CREATE TABLE sessions (
	id              text COLLATE "C" PRIMARY KEY, -- compared bytewise, so an id prefix is a range of the key
	title           text NOT NULL DEFAULT '',
	cwd             text NOT NULL,
	additional_dirs jsonb NOT NULL DEFAULT '[]', -- array of canonical paths
	profile         text NOT NULL DEFAULT '',
	project         text NOT NULL DEFAULT '',
	permission      text NOT NULL DEFAULT '',
	parent_id       text REFERENCES sessions (id) ON DELETE CASCADE,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	-- The last row's seq. Appends bump it in the UPDATE that locks the
	-- session's row, so concurrent appends from several hosts number
	-- their rows without a gap or a clash.
	last_seq        bigint NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_updated ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_cwd ON sessions (cwd, updated_at DESC, id DESC);
CREATE INDEX sessions_by_parent ON sessions (parent_id);

CREATE TABLE rows (
	session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        bigint NOT NULL,
	turn       bigint NOT NULL,
	kind       text NOT NULL,
	payload    text NOT NULL, -- the entry's JSON, as session.EncodeEntry writes it
	time       timestamptz NOT NULL,
	PRIMARY KEY (session_id, seq)
);

-- Fencing numbers: each taking of a lock gets a new one, and an append
-- under a lock checks that its number is still the row's.
CREATE SEQUENCE lock_fence;

CREATE TABLE locks (
	session_id text PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	pid        integer NOT NULL,
	host       text NOT NULL,
	token      text NOT NULL,
	fence      bigint NOT NULL,
	expires_at timestamptz NOT NULL -- against the server's now()
);
`},
	{2, "schedule", `
CREATE TABLE schedule_jobs (
	id            text COLLATE "C" PRIMARY KEY,
	session_id    text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	prompt        text NOT NULL,
	kind          text NOT NULL,             -- every, cron or once
	spec          text NOT NULL DEFAULT '',  -- the interval as written, or the cron expression
	interval_us   bigint NOT NULL DEFAULT 0,
	zone          text NOT NULL DEFAULT '',
	cwd           text NOT NULL DEFAULT '',
	gate          text NOT NULL DEFAULT '',  -- JSON; empty when ungated
	level         text NOT NULL DEFAULT '',  -- the session's level when the job was created
	baseline      text,                      -- the gate's last observation; NULL before the first
	next_at       timestamptz NOT NULL,
	created_at    timestamptz NOT NULL,
	last_fired_at timestamptz,               -- NULL before the first delivery
	lease_owner   text NOT NULL DEFAULT '',
	lease_until   timestamptz,               -- NULL when nobody holds the occurrence
	failed_claims integer NOT NULL DEFAULT 0, -- claims that ended in neither delivery nor handback
	held          text NOT NULL DEFAULT ''   -- why the job is parked; empty when it is not
);
CREATE INDEX schedule_jobs_due ON schedule_jobs (next_at) WHERE held = '';
CREATE INDEX schedule_jobs_by_session ON schedule_jobs (session_id, next_at);

-- Each occurrence of a job fires once: a delivery records (job, time)
-- here in the transaction that advances the job, and a second delivery
-- of the same occurrence fails on the key.
CREATE TABLE schedule_fired (
	job_id     text NOT NULL REFERENCES schedule_jobs (id) ON DELETE CASCADE,
	occurrence timestamptz NOT NULL,
	owner      text NOT NULL,
	fired_at   timestamptz NOT NULL,
	PRIMARY KEY (job_id, occurrence)
);
`},
	{3, "fork point", `ALTER TABLE sessions ADD COLUMN forked_at bigint NOT NULL DEFAULT 0;`},
	{4, "approvals", `ALTER TABLE sessions ADD COLUMN approvals boolean NOT NULL DEFAULT false;`},
	{5, "sub-agent call", `
ALTER TABLE sessions ADD COLUMN parent_call_id text NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN agent text NOT NULL DEFAULT '';`},
	{6, "feed", `
-- The durable event feed: one row per event a live client may be sent,
-- ids increasing in commit order (writers hold an advisory lock, see
-- feed.go).
CREATE TABLE feed (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	session_id text NOT NULL DEFAULT '',
	turn       bigint NOT NULL DEFAULT 0,
	type       text NOT NULL,
	data       text NOT NULL, -- the event's JSON
	time       timestamptz NOT NULL
);
CREATE INDEX feed_by_session ON feed (session_id, id);
`},
	{7, "webhook outbox", `
-- Webhook deliveries, copied from the feed past each endpoint's cursor and
-- keyed by (endpoint, event), so hosts that fill the outbox at once add
-- each delivery once; a delivery is sent by whoever claims its lease.
CREATE TABLE webhook_cursors (
	endpoint text PRIMARY KEY,
	after    bigint NOT NULL,
	disabled boolean NOT NULL DEFAULT false -- the endpoint answered 410 Gone
);
CREATE TABLE webhook_outbox (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	endpoint    text NOT NULL,
	event_id    bigint NOT NULL,
	attempt     integer NOT NULL DEFAULT 0,
	next_at     timestamptz NOT NULL,
	lease_owner text NOT NULL DEFAULT '',
	lease_until timestamptz, -- NULL when nobody holds it
	status      text NOT NULL DEFAULT 'pending', -- pending, delivered, dead, disabled
	last_error  text NOT NULL DEFAULT '',
	UNIQUE (endpoint, event_id)
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (status, next_at);
`},
	{8, "projects and memories", `
-- Projects (names a session can be on) and memories (short notes scoped
-- to a project, or to the user for project '').
CREATE TABLE projects (
	name       text PRIMARY KEY,
	dir        text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL
);
CREATE TABLE memories (
	id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	project    text NOT NULL DEFAULT '', -- '' is the user's own scope
	text       text NOT NULL,
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL
);
CREATE INDEX memories_by_project ON memories (project, updated_at DESC, id DESC);
`},
	{9, "spend", spendSchema},           // spend.go
	{10, "browser logins", loginSchema}, // logins.go (SQLite's 11: its 10 is an index only SQLite needs)
	{11, "job isolation", `ALTER TABLE schedule_jobs ADD COLUMN isolation text NOT NULL DEFAULT '';`},
}

// SchemaVersion is the version Open migrates a database to.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrateLock is the advisory lock key that serializes migrations of
// hosts opening a new database at once ("meka" in ASCII).
const migrateLock = 0x6d656b61

// migrate brings the database up to the last migration. Each step runs in
// a transaction that first takes an advisory lock and rereads the
// version, so hosts migrating at once apply each step exactly once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	// Two hosts creating the table at once would collide in the catalog:
	// the advisory lock makes them take turns here too.
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for _, m := range migrations {
		if err := apply(ctx, pool, m); err != nil {
			return err
		}
	}
	return nil
}

// apply runs one step and records it, unless it was applied already.
func apply(ctx context.Context, pool *pgxpool.Pool, m migration) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	var v int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > SchemaVersion() {
		return fmt.Errorf("%w: version %d, this meka knows %d", ErrSchemaTooNew, v, SchemaVersion())
	}
	if v >= m.version {
		return nil
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
	}
	return nil
}
