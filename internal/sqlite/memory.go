package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"meka.dev/meka/internal/storerec"
)

// memorySchema holds projects (names a session can be on) and memories
// (short notes scoped to a project, or to the user for project "").
const memorySchema = `
CREATE TABLE projects (
	name       TEXT PRIMARY KEY,
	dir        TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE memories (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	project    TEXT NOT NULL DEFAULT '', -- '' is the user's own scope
	text       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX memories_by_project ON memories (project, updated_at DESC, id DESC);
`

// Errors of the project and memory stores, for errors.Is.
var (
	ErrNoProject     = errors.New("no such project")
	ErrProjectExists = errors.New("project already exists")
	ErrNoMemory      = storerec.ErrNoMemory
)

// Project is a name sessions can be on.
type Project = storerec.Project

// Projects is the project store kept in a DB. It is safe for concurrent use.
type Projects struct{ db *DB }

// Projects returns the project store kept in db.
func (db *DB) Projects() *Projects { return &Projects{db: db} }

// Add creates a project.
func (p *Projects) Add(ctx context.Context, name, dir string) (Project, error) {
	if err := p.db.checkOpen(); err != nil {
		return Project{}, fmt.Errorf("add project: %w", err)
	}
	pr := Project{Name: name, Dir: dir, CreatedAt: p.db.now()}
	res, err := p.db.writer.ExecContext(ctx, `INSERT INTO projects (name, dir, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
		name, dir, toMicro(pr.CreatedAt))
	ok, err := wrote(res, wrapErr("add project "+name, err))
	if err != nil {
		return Project{}, err
	}
	if !ok {
		return Project{}, fmt.Errorf("add project %s: %w", name, ErrProjectExists)
	}
	return pr, nil
}

// Get returns the project named name, or ErrNoProject.
func (p *Projects) Get(ctx context.Context, name string) (Project, error) {
	if err := p.db.checkOpen(); err != nil {
		return Project{}, fmt.Errorf("get project: %w", err)
	}
	var pr Project
	var created int64
	err := p.db.reader.QueryRowContext(ctx, `SELECT name, dir, created_at FROM projects WHERE name = ?`, name).Scan(&pr.Name, &pr.Dir, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Project{}, fmt.Errorf("get project %s: %w", name, ErrNoProject)
	}
	if err != nil {
		return Project{}, wrapErr("get project "+name, err)
	}
	pr.CreatedAt = fromMicro(created)
	return pr, nil
}

// List returns every project by name.
func (p *Projects) List(ctx context.Context) ([]Project, error) {
	if err := p.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	rs, err := p.db.reader.QueryContext(ctx, `SELECT name, dir, created_at FROM projects ORDER BY name`)
	if err != nil {
		return nil, wrapErr("list projects", err)
	}
	defer rs.Close()
	var out []Project
	for rs.Next() {
		var pr Project
		var created int64
		if err := rs.Scan(&pr.Name, &pr.Dir, &created); err != nil {
			return nil, wrapErr("list projects", err)
		}
		pr.CreatedAt = fromMicro(created)
		out = append(out, pr)
	}
	return out, wrapErr("list projects", rs.Err())
}

// Memory is one note.
type Memory = storerec.Memory

// Memories is the memory store kept in a DB. It is safe for concurrent use.
type Memories struct{ db *DB }

// Memories returns the memory store kept in db.
func (db *DB) Memories() *Memories { return &Memories{db: db} }

func memoryKey(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(id)), "m"), 10, 64)
	return n, err == nil && n > 0
}

func scanMemory(sc interface{ Scan(...any) error }) (Memory, error) {
	var m Memory
	var id, created, updated int64
	if err := sc.Scan(&id, &m.Project, &m.Text, &created, &updated); err != nil {
		return Memory{}, err
	}
	m.ID = "m" + strconv.FormatInt(id, 10)
	m.CreatedAt, m.UpdatedAt = fromMicro(created), fromMicro(updated)
	return m, nil
}

const memoryColumns = `id, project, text, created_at, updated_at`

// List returns a scope's memories, newest first; limit 0 means all.
func (s *Memories) List(ctx context.Context, project string, limit int) ([]Memory, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	if limit <= 0 {
		limit = -1
	}
	st, err := s.db.stmts.memoriesStmt(ctx, s.db.reader)
	if err != nil {
		return nil, wrapErr("list memories", err)
	}
	rs, err := st.QueryContext(ctx, project, limit)
	if err != nil {
		return nil, wrapErr("list memories", err)
	}
	defer rs.Close()
	var out []Memory
	for rs.Next() {
		m, err := scanMemory(rs)
		if err != nil {
			return nil, wrapErr("list memories", err)
		}
		out = append(out, m)
	}
	return out, wrapErr("list memories", rs.Err())
}

// Get returns a memory of the scope, or ErrNoMemory.
func (s *Memories) Get(ctx context.Context, project, id string) (Memory, error) {
	n, ok := memoryKey(id)
	if !ok {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNoMemory)
	}
	m, err := scanMemory(s.db.reader.QueryRowContext(ctx, `SELECT `+memoryColumns+` FROM memories WHERE id = ? AND project = ?`, n, project))
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("get memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("get memory "+id, err)
}

// Put creates a memory in a scope (id "") or replaces one of its text.
func (s *Memories) Put(ctx context.Context, project, id, text string) (Memory, error) {
	if err := s.db.checkOpen(); err != nil {
		return Memory{}, fmt.Errorf("write memory: %w", err)
	}
	now := toMicro(s.db.now())
	if id == "" {
		m, err := scanMemory(s.db.writer.QueryRowContext(ctx, `INSERT INTO memories (project, text, created_at, updated_at) VALUES (?, ?, ?, ?)
			RETURNING `+memoryColumns, project, text, now, now))
		return m, wrapErr("write memory", err)
	}
	n, ok := memoryKey(id)
	if !ok {
		return Memory{}, fmt.Errorf("write memory %q: %w", id, ErrNoMemory)
	}
	m, err := scanMemory(s.db.writer.QueryRowContext(ctx, `UPDATE memories SET text = ?, updated_at = ? WHERE id = ? AND project = ?
		RETURNING `+memoryColumns, text, now, n, project))
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("write memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("write memory "+id, err)
}

// Delete removes a memory of the scope and returns it.
func (s *Memories) Delete(ctx context.Context, project, id string) (Memory, error) {
	if err := s.db.checkOpen(); err != nil {
		return Memory{}, fmt.Errorf("delete memory: %w", err)
	}
	n, ok := memoryKey(id)
	if !ok {
		return Memory{}, fmt.Errorf("delete memory %q: %w", id, ErrNoMemory)
	}
	m, err := scanMemory(s.db.writer.QueryRowContext(ctx, `DELETE FROM memories WHERE id = ? AND project = ? RETURNING `+memoryColumns, n, project))
	if errors.Is(err, sql.ErrNoRows) {
		return Memory{}, fmt.Errorf("delete memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("delete memory "+id, err)
}
