package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"meka.dev/meka/internal/storerec"
	"meka.dev/meka/session"
)

// Sessions is the session store kept in a DB. It is safe for concurrent
// use, and by several processes sharing the file.
type Sessions struct{ db *DB }

var _ session.Store = (*Sessions)(nil)

// List page sizes.
const (
	defaultPageSize = 50
	maxPageSize     = 1000
)

// Extended SQLite result codes the store maps to session errors.
const (
	sqliteConstraintForeignKey = 787
	sqliteConstraintPrimaryKey = 1555
)

// ErrInvalidCursor is returned by List for a cursor it did not issue.
var ErrInvalidCursor = errors.New("invalid session list cursor")

// Close closes the DB the store is kept in.
func (s *Sessions) Close() error { return s.db.Close() }

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
	} else {
		m.CreatedAt = fromMicro(toMicro(m.CreatedAt))
	}
	if m.UpdatedAt.IsZero() {
		m.UpdatedAt = m.CreatedAt
	} else {
		m.UpdatedAt = fromMicro(toMicro(m.UpdatedAt))
	}
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return session.Meta{}, fmt.Errorf("create session: %w", err)
	}
	_, err = db.writer.ExecContext(ctx, `
INSERT INTO sessions (id, title, cwd, additional_dirs, profile, project, permission, approvals, parent_id, parent_call_id, agent, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, nullable(m.ParentID), m.ParentCallID, m.Agent,
		toMicro(m.CreatedAt), toMicro(m.UpdatedAt))
	switch sqliteCode(err) {
	case 0:
	case sqliteConstraintForeignKey:
		return session.Meta{}, fmt.Errorf("create session: parent %s: %w", m.ParentID, session.ErrNotFound)
	case sqliteConstraintPrimaryKey:
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
	rd, err := db.stmts.reading(ctx)
	if err != nil {
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, err)
	}
	rows, err := rd.prefix.QueryContext(ctx, p, upper)
	if err != nil {
		return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, err)
	}
	defer rows.Close()
	var found []session.Meta
	for rows.Next() {
		m, err := scanMeta(rows)
		if err != nil {
			return session.Meta{}, fmt.Errorf("get session %q: %w", idOrPrefix, err)
		}
		found = append(found, m)
	}
	if err := rows.Err(); err != nil {
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

// Update replaces a session's title, additional dirs, profile, project and
// permission. It leaves updated_at alone: that time follows the log, so a
// change of settings does not reorder the listing.
func (s *Sessions) Update(ctx context.Context, m session.Meta) error {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return fmt.Errorf("update session: %w", err)
	}
	dirs, err := encodeDirs(m.AdditionalDirs)
	if err != nil {
		return fmt.Errorf("update session %s: %w", m.ID, err)
	}
	res, err := db.writer.ExecContext(ctx, `
UPDATE sessions SET title = ?, cwd = ?, additional_dirs = ?, profile = ?, project = ?, permission = ?, approvals = ?
WHERE id = ?`, m.Title, m.Cwd, dirs, m.Profile, m.Project, m.Permission, m.Approvals, m.ID)
	if err != nil {
		return fmt.Errorf("update session %s: %w", m.ID, err)
	}
	return affected(res, "update session "+m.ID)
}

// List returns one page of sessions, newest updated first. Its cursor is a
// keyset position (updated_at, id), so sessions created while a listing
// pages on neither repeat nor shift the pages after.
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
	if opts.Cwd != "" {
		where = append(where, "cwd = ?")
		args = append(args, opts.Cwd)
	}
	switch {
	case opts.Parent != "":
		where = append(where, "parent_id = ?")
		args = append(args, strings.ToLower(opts.Parent))
	case !opts.SubAgents:
		where = append(where, "parent_id IS NULL")
	}
	if opts.Cursor != "" {
		at, id, err := decodeCursor(opts.Cursor)
		if err != nil {
			return session.Page{}, fmt.Errorf("list sessions: %w", err)
		}
		where = append(where, "(updated_at < ? OR (updated_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	q := `SELECT ` + metaColumns + ` FROM sessions`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)

	rows, err := db.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	var page session.Page
	for rows.Next() {
		m, err := scanMeta(rows)
		if err != nil {
			return session.Page{}, fmt.Errorf("list sessions: %w", err)
		}
		page.Sessions = append(page.Sessions, m)
	}
	if err := rows.Err(); err != nil {
		return session.Page{}, fmt.Errorf("list sessions: %w", err)
	}
	if len(page.Sessions) > limit {
		page.Sessions = page.Sessions[:limit]
		last := page.Sessions[limit-1]
		page.Next = encodeCursor(toMicro(last.UpdatedAt), last.ID)
	}
	return page, nil
}

// Latest returns the most recently updated top-level session in cwd.
func (s *Sessions) Latest(ctx context.Context, cwd string) (session.Meta, error) {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return session.Meta{}, fmt.Errorf("latest session: %w", err)
	}
	m, err := scanMeta(db.reader.QueryRowContext(ctx, `SELECT `+metaColumns+` FROM sessions
WHERE cwd = ? AND parent_id IS NULL ORDER BY updated_at DESC, id DESC LIMIT 1`, cwd))
	return m, wrapErr("latest session in "+cwd, err)
}

// Delete removes a session with its rows, its lock and its sub-agents'
// sessions.
func (s *Sessions) Delete(ctx context.Context, sessionID string) error {
	db := s.db
	if err := db.checkOpen(); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	res, err := db.writer.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, sessionID)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", sessionID, err)
	}
	return affected(res, "delete session "+sessionID)
}

// scanMeta reads the metaColumns of one session.
func scanMeta(sc interface{ Scan(...any) error }) (session.Meta, error) {
	var m session.Meta
	var dirs []byte
	var created, updated int64
	err := sc.Scan(&m.ID, &m.Title, &m.Cwd, &dirs, &m.Profile, &m.Project, &m.Permission, &m.ParentID, &m.ParentCallID, &m.Agent, &m.ForkedAt, &m.Approvals, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
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
	m.CreatedAt, m.UpdatedAt = fromMicro(created), fromMicro(updated)
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

// A cursor is base64url("<updated_at µs>:<id>"): opaque to callers, and
// validated on the way back in since it comes from a client.
func encodeCursor(updatedAt int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updatedAt, 10) + ":" + id))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	at, id, ok := strings.Cut(string(b), ":")
	us, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || uuid.Validate(id) != nil {
		return 0, "", fmt.Errorf("%w: %q", ErrInvalidCursor, c)
	}
	return us, id, nil
}

// nullable stores an empty string as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// sqliteCode returns the extended result code of a driver error, 0 for
// nil, -1 for an error that carries none.
func sqliteCode(err error) int {
	if err == nil {
		return 0
	}
	var e interface{ Code() int }
	if errors.As(err, &e) {
		return e.Code()
	}
	return -1
}

// affected turns a write that matched no session into ErrNotFound.
func affected(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, session.ErrNotFound)
	}
	return nil
}

// wrapErr prefixes err with op, keeping nil nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}
