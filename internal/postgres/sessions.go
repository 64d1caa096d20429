package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// Sessions is the session store kept in a DB. It is safe for concurrent
// use, and by hosts on several machines sharing the database.
type Sessions struct{ db *DB }

var _ session.Store = (*Sessions)(nil)

// List page sizes.
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// ErrInvalidCursor is returned by List for a cursor it did not issue.
var ErrInvalidCursor = errors.New("invalid session list cursor")

// metaColumns are the columns scanMeta reads, in order.
const metaColumns = `id, title, cwd, additional_dirs, profile, project, permission, coalesce(parent_id, ''), parent_call_id, agent, forked_at, approvals, created_at, updated_at`

// Close closes the DB the store is kept in.
func (s *Sessions) Close() error { return s.db.Close() }

// DB returns the database the store is kept in.
func (s *Sessions) DB() *DB { return s.db }

// Create stores a new session. An ID, when given, must be a UUID; it is
// stored in canonical form.
func (s *Sessions) Create(ctx context.Context, m session.Meta) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("create session: %w", err)
	}
	if m.ID == "" {
		u, err := uuid.NewRandom()
		if err != nil {
			return session.Meta{}, fmt.Errorf("create session: %w", err)
		}
		m.ID = u.String()
	} else {
		u, err := uuid.Parse(m.ID)
		if err != nil {
			return session.Meta{}, fmt.Errorf("create session: id %q: %w", m.ID, err)
		}
		m.ID = u.String()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = db.now()
	}
	m.CreatedAt = micro(m.CreatedAt)
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	}
	m.UpdatedAt = micro(m.UpdatedAt)
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return session.Meta{}, fmt.Errorf("create session: %w", err)
	}
	_, err = db.pool.Exec(ctx, `
INSERT INTO sessions (id, title, cwd, additional_dirs, profile, project, permission, approvals, parent_id, parent_call_id, agent, forked_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		m.ID, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, nullable(m.ParentID), m.ParentCallID, m.Agent, m.ForkedAt,
		m.CreatedAt, m.UpdatedAt)
	switch pgCode(err) {
	case "":
		if err != nil {
			return session.Meta{}, fmt.Errorf("create session: %w", err)
		}
	case codeForeignKeyViolation:
		return session.Meta{}, fmt.Errorf("create session: parent %s: %w", m.ParentID, session.ErrNotFound)
	case codeUniqueViolation:
		return session.Meta{}, fmt.Errorf("create session: id %s already exists", m.ID)
	default:
		return session.Meta{}, fmt.Errorf("create session: %w", err)
	}
	if len(m.AdditionalDirs) == 0 {
		m.AdditionalDirs = nil
	}
	return m, nil
}

// Get returns a session by full id or unique prefix. Ids are compared in
// lower case, as they are stored.
func (s *Sessions) Get(ctx context.Context, idOrPrefix string) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("get session: %w", err)
	}
	p, upper, ok := storerec.IDRange(idOrPrefix)
	if !ok {
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, session.ErrNotFound)
	}
	rows, err := db.pool.Query(ctx, `SELECT `+metaColumns+` FROM sessions
WHERE id >= $1 AND id < $2 ORDER BY id LIMIT 2`, p, upper)
	if err != nil {
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, err)
	}
	found, err := scanMetas(rows)
	if err != nil {
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, err)
	}
	switch len(found) {
	case 0:
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, session.ErrNotFound)
	case 1:
		return found[0], nil
	default:
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, session.ErrAmbiguous)
	}
}

// Update replaces a session's title, cwd, additional dirs, profile,
// project, permission and approvals. It leaves updated_at alone: that time
// follows the log.
func (s *Sessions) Update(ctx context.Context, m session.Meta) error {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return fmt.Errorf("update session: %w", err)
	}
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return fmt.Errorf("update session %s: %w", m.ID, err)
	}
	tag, err := db.pool.Exec(ctx, `
UPDATE sessions SET title = $1, cwd = $2, additional_dirs = $3, profile = $4, project = $5, permission = $6, approvals = $7
WHERE id = $8`, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, m.ID)
	if err != nil {
		return fmt.Errorf("update session %s: %w", m.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("update session %s: %w", m.ID, session.ErrNotFound)
	}
	return nil
}

// List returns one page of sessions, newest updated first, by a keyset
// cursor (updated_at, id).
func (s *Sessions) List(ctx context.Context, opts session.ListOptions) (session.Page, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	limit = min(limit, maxPageSize)

	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if opts.Cwd != "" {
		where = append(where, "cwd = "+arg(opts.Cwd))
	}
	switch {
	case opts.Parent != "":
		where = append(where, "parent_id = "+arg(strings.ToLower(opts.Parent)))
	case !opts.SubAgents:
		where = append(where, "parent_id IS NULL")
	}
	if opts.Cursor != "" {
		at, id, err := decodeCursor(opts.Cursor)
		if err != nil {
			return session.Page{}, fmt.Errorf("list sessions: %w", err)
		}
		where = append(where, "(updated_at, id) < ("+arg(at)+", "+arg(id)+")")
	}
	q := `SELECT ` + metaColumns + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ` + arg(limit+1)

	rows, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	found, err := scanMetas(rows)
	if err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	page := session.Page{Sessions: found}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		last := page.Sessions[limit-1]
		page.Next = encodeCursor(last.UpdatedAt, last.ID)
	}
	return page, nil
}

// Latest returns the most recently updated top-level session in cwd.
func (s *Sessions) Latest(ctx context.Context, cwd string) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("latest session: %w", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT `+metaColumns+` FROM sessions
WHERE cwd = $1 AND parent_id IS NULL ORDER BY updated_at DESC, id DESC LIMIT 1`, cwd)
	if err != nil {
		return session.Meta{}, fmt.Errorf("latest session in %s: %w", cwd, err)
	}
	found, err := scanMetas(rows)
	if err != nil {
		return session.Meta{}, fmt.Errorf("latest session in %s: %w", cwd, err)
	}
	if len(found) == 0 {
		return session.Meta{}, fmt.Errorf("latest session in %s: %w", cwd, session.ErrNotFound)
	}
	return found[0], nil
}

// Delete removes a session with its rows, its lock, its jobs and its
// sub-agents' sessions.
func (s *Sessions) Delete(ctx context.Context, sessionID string) error {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, sessionID)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete session %s: %w", sessionID, session.ErrNotFound)
	}
	return nil
}

// scanMetas reads the metaColumns of every row and closes rows.
func scanMetas(rows pgx.Rows) ([]session.Meta, error) {
	defer rows.Close()
	var out []session.Meta
	for rows.Next() {
		m, err := scanMeta(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func scanMeta(sc pgx.Row) (session.Meta, error) {
	var m session.Meta
	var dirs []byte
	err := sc.Scan(&m.ID, &m.Title, &m.Cwd, &dirs, &m.Profile, &m.Project, &m.Permission, &m.ParentID, &m.ParentCallID, &m.Agent, &m.ForkedAt, &m.Approvals, &m.CreatedAt, &m.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return session.Meta{}, session.ErrNotFound
	}
	if err != nil {
		return session.Meta{}, err
	}
	if err := json.Unmarshal(dirs, &m.AdditionalDirs); err != nil {
		return session.Meta{}, fmt.Errorf("decode additional dirs of %s: %w", m.ID, err)
	}
	if len(m.AdditionalDirs) == 0 {
		m.AdditionalDirs = nil
	}
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, nil
}

func encodeDirs(dirs []string) (string, error) {
	if len(dirs) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(dirs)
	if err != nil {
		return "", fmt.Errorf("encode additional dirs: %w", err)
	}
	return string(b), nil
}

// A cursor is base64url("<updated_at µs>:<id>"), the form internal/sqlite
// issues: opaque to callers, validated on the way back in.
func encodeCursor(updatedAt time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updatedAt.UnixMicro(), 10) + ":" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	at, id, ok := strings.Cut(string(b), ":")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || uuid.Validate(id) != nil {
		return time.Time{}, "", fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	return time.UnixMicro(us).UTC(), id, nil
}

// nullable stores an empty string as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
