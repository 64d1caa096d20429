package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/rowcodec"
	"meka.dev/meka/session"
)

// Counts returns how many sessions and jobs the database holds: zero of
// both is an empty target for a copy from SQLite.
func (db *DB) Counts(ctx context.Context) (sessions, jobs int64, err error) {
	err = db.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM schedule_jobs)`).Scan(&sessions, &jobs)
	return sessions, jobs, wrapErr("count sessions and jobs", err)
}

// ImportSession stores a session with its rows exactly as another store
// kept them (id, sequence numbers, times), in one transaction. A session
// whose id is already here is left alone and ImportSession reports false,
// so a copy run twice copies each session once. A sub-agent's session
// needs its parent imported first.
func (db *DB) ImportSession(ctx context.Context, m session.Meta, rows []session.Row) (bool, error) {
	if err := db.checkOpen(); err != nil {
		return false, fmt.Errorf("import session: %w", err)
	}
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return false, fmt.Errorf("import session %s: %w", m.ID, err)
	}
	seqs := make([]int64, len(rows))
	turns := make([]int64, len(rows))
	kinds := make([]string, len(rows))
	payloads := make([]string, len(rows))
	times := make([]time.Time, len(rows))
	var last int64
	for i, r := range rows {
		kind, payload, err := rowcodec.Encode(r.Entry)
		if err != nil {
			return false, fmt.Errorf("import session %s: row %d: %w", m.ID, r.Seq, err)
		}
		seqs[i], turns[i], kinds[i], payloads[i], times[i] = r.Seq, r.Turn, kind, string(payload), micro(r.Time)
		last = max(last, r.Seq)
	}
	var inserted bool
	err = db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
INSERT INTO sessions (id, title, cwd, additional_dirs, profile, project, permission, approvals, parent_id, parent_call_id, agent, forked_at, created_at, updated_at, last_seq)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (id) DO NOTHING`,
			m.ID, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, nullable(m.ParentID), m.ParentCallID, m.Agent,
			m.ForkedAt, micro(m.CreatedAt), micro(m.UpdatedAt), last)
		if pgCode(err) == codeForeignKeyViolation {
			return fmt.Errorf("parent %s: %w", m.ParentID, session.ErrNotFound)
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		inserted = true
		_, err = tx.Exec(ctx, `INSERT INTO rows (session_id, seq, turn, kind, payload, time)
SELECT $1, seq, turn, kind, payload, time FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[]) AS r (seq, turn, kind, payload, time)`,
			m.ID, seqs, turns, kinds, payloads, times)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("import session %s: %w", m.ID, err)
	}
	return inserted, nil
}

// ImportJob stores a job as another store kept it, without its lease (a
// lease taken on the other store binds no host here). A job whose id is
// already here is left alone and ImportJob reports false.
func (db *DB) ImportJob(ctx context.Context, j Job) (bool, error) {
	if err := db.checkOpen(); err != nil {
		return false, fmt.Errorf("import job: %w", err)
	}
	var baseline *string
	if j.HasBaseline {
		baseline = &j.Baseline
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO schedule_jobs (`+jobColumns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '', NULL, $15, $16, $17)
ON CONFLICT (id) DO NOTHING`,
		j.ID, j.SessionID, j.Prompt, j.Kind, j.Spec, j.Interval.Microseconds(), j.Zone, j.Cwd, j.Gate, j.Level,
		baseline, micro(j.NextAt), micro(j.CreatedAt), optional(j.LastFiredAt), j.FailedClaims, j.Held, j.Isolation)
	if pgCode(err) == codeForeignKeyViolation {
		return false, fmt.Errorf("import job %s: session %s: %w", j.ID, j.SessionID, session.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("import job %s: %w", j.ID, err)
	}
	return tag.RowsAffected() > 0, nil
}

// ImportProject stores a project as another store kept it; one already
// here is left alone and ImportProject reports false.
func (db *DB) ImportProject(ctx context.Context, p Project) (bool, error) {
	if err := db.checkOpen(); err != nil {
		return false, fmt.Errorf("import project: %w", err)
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO projects (name, dir, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		p.Name, p.Dir, micro(p.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("import project %s: %w", p.Name, reach(err))
	}
	return tag.RowsAffected() > 0, nil
}

// ImportMemory stores a memory under its id ("m" and a number) as another
// store kept it; one already here is left alone and ImportMemory reports
// false. New memories are numbered after the largest id imported.
func (db *DB) ImportMemory(ctx context.Context, m Memory) (bool, error) {
	if err := db.checkOpen(); err != nil {
		return false, fmt.Errorf("import memory: %w", err)
	}
	n, ok := memoryKey(m.ID)
	if !ok {
		return false, fmt.Errorf("import memory %q: %w", m.ID, ErrNoMemory)
	}
	var inserted bool
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO memories (id, project, text, created_at, updated_at) OVERRIDING SYSTEM VALUE
VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, n, m.Project, m.Text, micro(m.CreatedAt), micro(m.UpdatedAt))
		if err != nil {
			return err
		}
		inserted = tag.RowsAffected() > 0
		_, err = tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('memories', 'id'), (SELECT max(id) FROM memories))`)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("import memory %s: %w", m.ID, reach(err))
	}
	return inserted, nil
}
