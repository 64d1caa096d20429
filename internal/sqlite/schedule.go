package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// scheduleSchema is the schedule store's migration: one row per job. A
// row carries its next occurrence and, while a host works on that
// occurrence, the host's lease on it.
const scheduleSchema = `
CREATE TABLE schedule_jobs (
	id            TEXT PRIMARY KEY,
	session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	prompt        TEXT NOT NULL,
	kind          TEXT NOT NULL,             -- every, cron or once
	spec          TEXT NOT NULL DEFAULT '',  -- the interval as written, or the cron expression
	interval_us   INTEGER NOT NULL DEFAULT 0,
	zone          TEXT NOT NULL DEFAULT '',
	cwd           TEXT NOT NULL DEFAULT '',
	gate          TEXT NOT NULL DEFAULT '',  -- JSON; empty when ungated
	level         TEXT NOT NULL DEFAULT '',  -- the session's level when the job was created
	baseline      TEXT,                      -- the gate's last observation; NULL before the first
	next_at       INTEGER NOT NULL,
	created_at    INTEGER NOT NULL,
	last_fired_at INTEGER NOT NULL DEFAULT 0,
	lease_owner   TEXT NOT NULL DEFAULT '',
	lease_until   INTEGER NOT NULL DEFAULT 0, -- 0 when nobody holds the occurrence
	failed_claims INTEGER NOT NULL DEFAULT 0, -- claims that ended in neither delivery nor handback
	held          TEXT NOT NULL DEFAULT ''   -- why the job is parked; empty when it is not
) STRICT;
CREATE INDEX schedule_jobs_due ON schedule_jobs (next_at) WHERE held = '';
CREATE INDEX schedule_jobs_by_session ON schedule_jobs (session_id, next_at);
`

// Errors of the schedule store.
var (
	ErrJobNotFound  = storerec.ErrJobNotFound
	ErrJobAmbiguous = storerec.ErrJobAmbiguous
	ErrTooManyJobs  = storerec.ErrTooManyJobs
)

// Job is a scheduled job as the store keeps it.
type Job = storerec.Job

// Schedules is the schedule store kept in a DB. It is safe for concurrent
// use, and by several processes sharing the file: every change of a job's
// lease is one conditional write.
type Schedules struct{ db *DB }

// Schedules returns the schedule store kept in db.
func (db *DB) Schedules() *Schedules { return &Schedules{db: db} }

const jobColumns = `id, session_id, prompt, kind, spec, interval_us, zone, cwd, gate, level, baseline,
	next_at, created_at, last_fired_at, lease_owner, lease_until, failed_claims, held, isolation`

func scanJob(sc interface{ Scan(...any) error }) (Job, error) {
	var (
		j                                          Job
		interval, next, created, fired, leaseUntil int64
		baseline                                   sql.NullString
	)
	if err := sc.Scan(&j.ID, &j.SessionID, &j.Prompt, &j.Kind, &j.Spec, &interval, &j.Zone, &j.Cwd, &j.Gate, &j.Level,
		&baseline, &next, &created, &fired, &j.LeaseOwner, &leaseUntil, &j.FailedClaims, &j.Held, &j.Isolation); err != nil {
		return Job{}, err
	}
	j.Interval = time.Duration(interval) * time.Microsecond
	j.Baseline, j.HasBaseline = baseline.String, baseline.Valid
	j.NextAt = fromMicro(next)
	j.CreatedAt = fromMicro(created)
	j.LastFiredAt = optionalTime(fired)
	j.LeaseUntil = optionalTime(leaseUntil)
	return j, nil
}

func optionalTime(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicro(us)
}

func optionalMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return toMicro(t)
}

func scanJobs(rs *sql.Rows) ([]Job, error) {
	defer rs.Close()
	var out []Job
	for rs.Next() {
		j, err := scanJob(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rs.Err()
}

// Create stores a new job, refusing with ErrTooManyJobs when its session
// already has maxJobs jobs (0 means no limit). The count and the insert
// are one transaction, so two hosts cannot both add the last job. An
// empty ID gets a fresh UUID; an empty CreatedAt the clock's time.
func (s *Schedules) Create(ctx context.Context, j Job, maxJobs int) (Job, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return Job{}, fmt.Errorf("create job: %w", err)
	}
	if j.ID == "" {
		u, err := uuid.NewRandom()
		if err != nil {
			return Job{}, fmt.Errorf("create job: %w", err)
		}
		j.ID = u.String()
	}
	j.ID = strings.ToLower(j.ID)
	if j.CreatedAt.IsZero() {
		j.CreatedAt = db.now()
	}
	j.CreatedAt = fromMicro(toMicro(j.CreatedAt))
	j.NextAt = fromMicro(toMicro(j.NextAt))
	j.LastFiredAt = optionalTime(optionalMicro(j.LastFiredAt))
	var baseline any
	if j.HasBaseline {
		baseline = j.Baseline
	}
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return Job{}, fmt.Errorf("create job: %w", err)
	}
	defer tx.Rollback()
	if maxJobs > 0 {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedule_jobs WHERE session_id = ?`, j.SessionID).Scan(&n); err != nil {
			return Job{}, fmt.Errorf("create job: %w", err)
		}
		if n >= maxJobs {
			return Job{}, fmt.Errorf("create job: %w (%d, the limit is %d)", ErrTooManyJobs, n, maxJobs)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO schedule_jobs (`+jobColumns+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', 0, 0, '', ?)`,
		j.ID, j.SessionID, j.Prompt, j.Kind, j.Spec, j.Interval.Microseconds(), j.Zone, j.Cwd, j.Gate, j.Level,
		baseline, toMicro(j.NextAt), toMicro(j.CreatedAt), optionalMicro(j.LastFiredAt), j.Isolation)
	switch sqliteCode(err) {
	case 0:
	case sqliteConstraintForeignKey:
		return Job{}, fmt.Errorf("create job: session %s: %w", j.SessionID, session.ErrNotFound)
	case sqliteConstraintPrimaryKey:
		return Job{}, fmt.Errorf("create job: id %s already exists", j.ID)
	default:
		return Job{}, fmt.Errorf("create job: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Job{}, fmt.Errorf("create job: %w", err)
	}
	j.LeaseOwner, j.LeaseUntil, j.FailedClaims, j.Held = "", time.Time{}, 0, ""
	return j, nil
}

// Get returns the job whose id is idOrPrefix or begins with it.
func (s *Schedules) Get(ctx context.Context, idOrPrefix string) (Job, error) {
	jobs, err := s.WithPrefix(ctx, idOrPrefix, 2)
	if err != nil {
		return Job{}, fmt.Errorf("get job %q: %w", idOrPrefix, err)
	}
	switch len(jobs) {
	case 0:
		return Job{}, fmt.Errorf("get job %q: %w", idOrPrefix, ErrJobNotFound)
	case 1:
		return jobs[0], nil
	}
	return Job{}, fmt.Errorf("get job %q: %w", idOrPrefix, ErrJobAmbiguous)
}

// WithPrefix returns up to limit jobs whose id begins with prefix (case
// insensitive), in id order. An empty prefix or one that no UUID can
// begin with matches nothing.
func (s *Schedules) WithPrefix(ctx context.Context, prefix string, limit int) ([]Job, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, err
	}
	p, upper, ok := storerec.IDRange(prefix)
	if !ok {
		return nil, nil
	}
	rs, err := s.db.reader.QueryContext(ctx, `SELECT `+jobColumns+` FROM schedule_jobs
WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`, p, upper, limit)
	if err != nil {
		return nil, err
	}
	return scanJobs(rs)
}

// List returns the jobs of a session, or of every session when sessionID
// is empty, by session and then next occurrence.
func (s *Schedules) List(ctx context.Context, sessionID string) ([]Job, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var (
		rs  *sql.Rows
		err error
	)
	if sessionID == "" {
		rs, err = s.db.reader.QueryContext(ctx, `SELECT `+jobColumns+` FROM schedule_jobs ORDER BY session_id, next_at, id`)
	} else {
		var st *sql.Stmt
		if st, err = s.db.stmts.jobsOfStmt(ctx, s.db.reader); err == nil {
			rs, err = st.QueryContext(ctx, sessionID)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := scanJobs(rs)
	return jobs, wrapErr("list jobs", err)
}

// Due returns up to limit jobs whose occurrence is due at now and that no
// lease holds (none taken, or one that expired), most overdue first.
// Parked jobs are left out.
func (s *Schedules) Due(ctx context.Context, now time.Time, limit int) ([]Job, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list due jobs: %w", err)
	}
	us := toMicro(now)
	// lease_until is 0 when free, so one comparison covers free and
	// expired leases.
	rs, err := s.db.reader.QueryContext(ctx, `SELECT `+jobColumns+` FROM schedule_jobs
WHERE held = '' AND next_at <= ?1 AND lease_until <= ?1 ORDER BY next_at, id LIMIT ?2`, us, limit)
	if err != nil {
		return nil, fmt.Errorf("list due jobs: %w", err)
	}
	jobs, err := scanJobs(rs)
	return jobs, wrapErr("list due jobs", err)
}

// Claim asks for the leases on due occurrences.
type Claim = storerec.Claim

// Claim takes the leases on the due occurrences of c.IDs in one
// statement, a conditional write per row: a job is claimed only while its
// occurrence is due at c.Now and no unexpired lease holds it, so of
// several hosts claiming the same job exactly one gets it. A lease found
// expired is a claim that ended in neither delivery nor handback and is
// counted; at c.MaxFailed the job is parked rather than claimed.
//
// It returns the jobs it wrote, as written: those claimed (LeaseOwner is
// c.Owner) and those it parked (Held is set). Jobs it did not get are
// left out.
func (s *Schedules) Claim(ctx context.Context, c Claim) ([]Job, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	if len(c.IDs) == 0 {
		return nil, nil
	}
	ids, err := json.Marshal(c.IDs)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	// In an UPDATE every expression reads the row as it was, so "failed"
	// below is the count including the lease found expired.
	const failed = `(failed_claims + (lease_owner <> ''))`
	const park = `?5 > 0 AND ` + failed + ` >= ?5`
	rs, err := s.db.writer.QueryContext(ctx, `UPDATE schedule_jobs SET
	failed_claims = `+failed+`,
	held          = CASE WHEN `+park+` THEN ?6 ELSE '' END,
	lease_owner   = CASE WHEN `+park+` THEN '' ELSE ?2 END,
	lease_until   = CASE WHEN `+park+` THEN 0 ELSE ?4 END
WHERE id IN (SELECT value FROM json_each(?1)) AND held = '' AND next_at <= ?3 AND lease_until <= ?3
RETURNING `+jobColumns,
		string(ids), c.Owner, toMicro(c.Now), toMicro(c.Until), c.MaxFailed, c.Held)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	jobs, err := scanJobs(rs)
	return jobs, wrapErr("claim jobs", err)
}

// Advance ends a delivered or spent occurrence: it moves a job to its next occurrence and ends the lease.
type Advance = storerec.Advance

// Advance applies a to the job if owner still holds its lease, and
// reports whether it did; a job canceled meanwhile is left gone.
func (s *Schedules) Advance(ctx context.Context, id, owner string, a Advance) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("advance job: %w", err)
	}
	var baseline any
	keep := 1
	if a.Baseline != nil {
		baseline, keep = *a.Baseline, 0
	}
	res, err := s.db.writer.ExecContext(ctx, `UPDATE schedule_jobs SET
	next_at = ?3,
	last_fired_at = CASE WHEN ?4 = 0 THEN last_fired_at ELSE ?4 END,
	baseline = CASE WHEN ?6 THEN baseline ELSE ?5 END,
	lease_owner = '', lease_until = 0, failed_claims = 0
WHERE id = ?1 AND lease_owner = ?2 AND lease_owner <> ''`,
		id, owner, toMicro(a.NextAt), optionalMicro(a.FiredAt), baseline, keep)
	return wrote(res, wrapErr("advance job "+id, err))
}

// Renew extends owner's lease on a job to until, reporting whether owner
// still held it: a job canceled or taken over meanwhile is not renewed.
func (s *Schedules) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("renew job lease: %w", err)
	}
	res, err := s.db.writer.ExecContext(ctx, `UPDATE schedule_jobs SET lease_until = ?
WHERE id = ? AND lease_owner = ? AND lease_owner <> ''`, toMicro(until), id, owner)
	return wrote(res, wrapErr("renew job lease "+id, err))
}

// Release hands an occurrence back: the lease ends if owner still holds
// it, with nothing else changed and nothing counted.
func (s *Schedules) Release(ctx context.Context, id, owner string) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("release job: %w", err)
	}
	res, err := s.db.writer.ExecContext(ctx, `UPDATE schedule_jobs SET lease_owner = '', lease_until = 0
WHERE id = ? AND lease_owner = ? AND lease_owner <> ''`, id, owner)
	return wrote(res, wrapErr("release job "+id, err))
}

// Retire deletes a one-shot job whose occurrence owner holds: delivered,
// declined or dropped.
func (s *Schedules) Retire(ctx context.Context, id, owner string) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("retire job: %w", err)
	}
	res, err := s.db.writer.ExecContext(ctx, `DELETE FROM schedule_jobs WHERE id = ? AND lease_owner = ? AND lease_owner <> ''`, id, owner)
	return wrote(res, wrapErr("retire job "+id, err))
}

// Delete cancels a job by full id, whoever holds it: a cancel always
// wins over a lease. It reports whether the job existed.
func (s *Schedules) Delete(ctx context.Context, id string) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("delete job: %w", err)
	}
	res, err := s.db.writer.ExecContext(ctx, `DELETE FROM schedule_jobs WHERE id = ?`, strings.ToLower(id))
	return wrote(res, wrapErr("delete job "+id, err))
}
