package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// Errors of the schedule store.
var (
	ErrJobNotFound  = storerec.ErrJobNotFound
	ErrJobAmbiguous = storerec.ErrJobAmbiguous
	ErrTooManyJobs  = storerec.ErrTooManyJobs
)

// jobsChannel is the NOTIFY channel a new or changed job is announced on.
const jobsChannel = "meka_jobs"

// Job is a scheduled job as the store keeps it.
type Job = storerec.Job

// Schedules is the schedule store kept in a DB. It is safe for concurrent
// use, and by hosts on several machines: every change of a job's lease is
// one conditional write, and a claim is one statement.
//
// Lease times are compared with the times callers pass (Claim.Now, the
// until of Renew), as in internal/sqlite, so both stores pass one
// conformance suite; a scheduler on this store reads its clock from
// DB.Now, the server's clock, so hosts with skewed clocks agree on when a
// lease ends.
type Schedules struct{ db *DB }

// Schedules returns the schedule store kept in db.
func (db *DB) Schedules() *Schedules { return &Schedules{db: db} }

const jobColumns = `id, session_id, prompt, kind, spec, interval_us, zone, cwd, gate, level, baseline,
	next_at, created_at, last_fired_at, lease_owner, lease_until, failed_claims, held, isolation`

func scanJob(sc pgx.Row) (Job, error) {
	var (
		j                 Job
		interval          int64
		baseline          *string
		fired, leaseUntil *time.Time
	)
	if err := sc.Scan(&j.ID, &j.SessionID, &j.Prompt, &j.Kind, &j.Spec, &interval, &j.Zone, &j.Cwd, &j.Gate, &j.Level,
		&baseline, &j.NextAt, &j.CreatedAt, &fired, &j.LeaseOwner, &leaseUntil, &j.FailedClaims, &j.Held, &j.Isolation); err != nil {
		return Job{}, err
	}
	j.Interval = time.Duration(interval) * time.Microsecond
	if baseline != nil {
		j.Baseline, j.HasBaseline = *baseline, true
	}
	j.NextAt, j.CreatedAt = j.NextAt.UTC(), j.CreatedAt.UTC()
	if fired != nil {
		j.LastFiredAt = fired.UTC()
	}
	if leaseUntil != nil {
		j.LeaseUntil = leaseUntil.UTC()
	}
	return j, nil
}

// optional stores a zero time as NULL.
func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = micro(t)
	return &t
}

func scanJobs(rs pgx.Rows) ([]Job, error) {
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
// already has maxJobs jobs (0 means no limit). The session's row is
// locked while the jobs are counted, so two hosts cannot both add the
// last job. The new job is announced to listening hosts on commit.
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
	j.CreatedAt, j.NextAt = micro(j.CreatedAt), micro(j.NextAt)
	if j.LastFiredAt.IsZero() {
		j.LastFiredAt = time.Time{}
	} else {
		j.LastFiredAt = micro(j.LastFiredAt)
	}
	var baseline *string
	if j.HasBaseline {
		baseline = &j.Baseline
	}
	var found bool
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		// The count is a statement of its own, after the lock: in READ
		// COMMITTED each statement reads what committed before it began.
		_, err := tx.Exec(ctx, `SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE`, j.SessionID)
		if err != nil {
			return err
		}
		var n int
		err = tx.QueryRow(ctx, `SELECT count(*), EXISTS (SELECT 1 FROM sessions WHERE id = $1) FROM schedule_jobs WHERE session_id = $1`, j.SessionID).Scan(&n, &found)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("session %s: %w", j.SessionID, session.ErrNotFound)
		}
		if maxJobs > 0 && n >= maxJobs {
			return fmt.Errorf("%w (%d, the limit is %d)", ErrTooManyJobs, n, maxJobs)
		}
		_, err = tx.Exec(ctx, `INSERT INTO schedule_jobs (`+jobColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '', NULL, 0, '', $15)`,
			j.ID, j.SessionID, j.Prompt, j.Kind, j.Spec, j.Interval.Microseconds(), j.Zone, j.Cwd, j.Gate, j.Level,
			baseline, j.NextAt, j.CreatedAt, optional(j.LastFiredAt), j.Isolation)
		switch pgCode(err) {
		case "":
			if err != nil {
				return err
			}
		case codeUniqueViolation:
			return fmt.Errorf("id %s already exists", j.ID)
		default:
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, jobsChannel, j.ID)
		return err
	})
	if err != nil {
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
	rs, err := s.db.pool.Query(ctx, `SELECT `+jobColumns+` FROM schedule_jobs
WHERE id >= $1 AND id < $2 ORDER BY id LIMIT $3`, p, upper, limit)
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
		rs  pgx.Rows
		err error
	)
	if sessionID == "" {
		rs, err = s.db.pool.Query(ctx, `SELECT `+jobColumns+` FROM schedule_jobs ORDER BY session_id, next_at, id`)
	} else {
		rs, err = s.db.pool.Query(ctx, `SELECT `+jobColumns+` FROM schedule_jobs WHERE session_id = $1 ORDER BY next_at, id`, sessionID)
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
	rs, err := s.db.pool.Query(ctx, `SELECT `+jobColumns+` FROM schedule_jobs
WHERE held = '' AND next_at <= $1 AND (lease_until IS NULL OR lease_until <= $1) ORDER BY next_at, id LIMIT $2`, micro(now), limit)
	if err != nil {
		return nil, fmt.Errorf("list due jobs: %w", err)
	}
	jobs, err := scanJobs(rs)
	return jobs, wrapErr("list due jobs", err)
}

// Claim asks for the leases on due occurrences.
type Claim = storerec.Claim

// Claim takes the leases on the due occurrences of c.IDs in one
// statement: the rows still due and free are locked FOR UPDATE SKIP
// LOCKED (a row another host is claiming right now is left to it rather
// than waited for) and written by UPDATE … RETURNING, so of several hosts
// claiming the same job exactly one gets it. A lease found expired is a
// claim that ended in neither delivery nor handback and is counted; at
// c.MaxFailed the job is parked rather than claimed.
//
// It returns the jobs it wrote, as written: those claimed (LeaseOwner is
// c.Owner) and those it parked (Held is set).
func (s *Schedules) Claim(ctx context.Context, c Claim) ([]Job, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	if len(c.IDs) == 0 {
		return nil, nil
	}
	// In an UPDATE every expression reads the row as it was, so "failed"
	// below is the count including the lease found expired.
	const failed = `(j.failed_claims + (j.lease_owner <> '')::int)`
	const park = `$5 > 0 AND ` + failed + ` >= $5`
	rs, err := s.db.pool.Query(ctx, `WITH free AS (
	SELECT id FROM schedule_jobs
	WHERE id = ANY($1) AND held = '' AND next_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
	FOR UPDATE SKIP LOCKED
)
UPDATE schedule_jobs j SET
	failed_claims = `+failed+`,
	held          = CASE WHEN `+park+` THEN $6 ELSE '' END,
	lease_owner   = CASE WHEN `+park+` THEN '' ELSE $2 END,
	lease_until   = CASE WHEN `+park+` THEN NULL ELSE $4::timestamptz END
FROM free WHERE j.id = free.id
RETURNING `+prefixed("j.", jobColumns),
		c.IDs, c.Owner, micro(c.Now), micro(c.Until), c.MaxFailed, c.Held)
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	jobs, err := scanJobs(rs)
	return jobs, wrapErr("claim jobs", err)
}

// prefixed qualifies each column of a list with a table alias.
func prefixed(alias, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = alias + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// Delivered returns the owner recorded as having delivered a job's
// occurrence at, "" when none is.
func (s *Schedules) Delivered(ctx context.Context, jobID string, at time.Time) (string, error) {
	var owner string
	err := s.db.pool.QueryRow(ctx, `SELECT owner FROM schedule_fired WHERE job_id = $1 AND occurrence = $2`, jobID, micro(at)).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return owner, wrapErr("read delivery of job "+jobID, err)
}

// Advance ends a delivered or spent occurrence: it moves a job to its next occurrence and ends the lease.
type Advance = storerec.Advance

// Advance applies a to the job if owner still holds its lease, and
// reports whether it did; a job canceled meanwhile is left gone. A
// delivery (FiredAt set) records the occurrence under its unique key
// (job, occurrence) in the same statement, with the owner that delivered
// it. What makes an occurrence fire once is the claim, a conditional
// write on the job's row that one host wins; the record is kept for the
// job's last delivery and says which host that was.
func (s *Schedules) Advance(ctx context.Context, id, owner string, a Advance) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("advance job: %w", err)
	}
	tag, err := s.db.pool.Exec(ctx, `WITH cur AS (
	SELECT id, next_at FROM schedule_jobs WHERE id = $1 AND lease_owner = $2 AND lease_owner <> '' FOR UPDATE
), fired AS (
	INSERT INTO schedule_fired (job_id, occurrence, owner, fired_at)
	SELECT id, next_at, $2, $4 FROM cur WHERE $4::timestamptz IS NOT NULL
	ON CONFLICT (job_id, occurrence) DO NOTHING
	RETURNING 1
), pruned AS (
	DELETE FROM schedule_fired f USING cur WHERE f.job_id = cur.id AND f.occurrence < cur.next_at
)
UPDATE schedule_jobs j SET
	next_at = $3,
	last_fired_at = coalesce($4, j.last_fired_at),
	baseline = CASE WHEN $6 THEN j.baseline ELSE $5 END,
	lease_owner = '', lease_until = NULL, failed_claims = 0
FROM cur WHERE j.id = cur.id`,
		id, owner, micro(a.NextAt), optional(a.FiredAt), a.Baseline, a.Baseline == nil)
	if err != nil {
		return false, fmt.Errorf("advance job %s: %w", id, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Renew extends owner's lease on a job to until, reporting whether owner
// still held it: a job canceled or taken over meanwhile is not renewed.
func (s *Schedules) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return s.write(ctx, "renew job lease "+id, `UPDATE schedule_jobs SET lease_until = $3
WHERE id = $1 AND lease_owner = $2 AND lease_owner <> ''`, id, owner, micro(until))
}

// Release hands an occurrence back: the lease ends if owner still holds
// it, with nothing else changed and nothing counted.
func (s *Schedules) Release(ctx context.Context, id, owner string) (bool, error) {
	return s.write(ctx, "release job "+id, `UPDATE schedule_jobs SET lease_owner = '', lease_until = NULL
WHERE id = $1 AND lease_owner = $2 AND lease_owner <> ''`, id, owner)
}

// Retire deletes a one-shot job whose occurrence owner holds: delivered,
// declined or dropped.
func (s *Schedules) Retire(ctx context.Context, id, owner string) (bool, error) {
	return s.write(ctx, "retire job "+id, `DELETE FROM schedule_jobs WHERE id = $1 AND lease_owner = $2 AND lease_owner <> ''`, id, owner)
}

// Delete cancels a job by full id, whoever holds it: a cancel always
// wins over a lease. It reports whether the job existed.
func (s *Schedules) Delete(ctx context.Context, id string) (bool, error) {
	return s.write(ctx, "delete job "+id, `DELETE FROM schedule_jobs WHERE id = $1`, strings.ToLower(id))
}

// write runs one conditional write and reports whether it took.
func (s *Schedules) write(ctx context.Context, op, q string, args ...any) (bool, error) {
	if err := s.db.checkOpen(); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	tag, err := s.db.pool.Exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	return tag.RowsAffected() > 0, nil
}
