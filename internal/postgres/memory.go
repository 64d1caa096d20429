package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/storerec"
)

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
	tag, err := p.db.pool.Exec(ctx, `INSERT INTO projects (name, dir, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
		name, dir, pr.CreatedAt)
	if err != nil {
		return Project{}, fmt.Errorf("add project %s: %w", name, reach(err))
	}
	if tag.RowsAffected() == 0 {
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
	err := p.db.pool.QueryRow(ctx, `SELECT name, dir, created_at FROM projects WHERE name = $1`, name).Scan(&pr.Name, &pr.Dir, &pr.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Project{}, fmt.Errorf("get project %s: %w", name, ErrNoProject)
	}
	pr.CreatedAt = pr.CreatedAt.UTC()
	return pr, wrapErr("get project "+name, reach(err))
}

// List returns every project by name.
func (p *Projects) List(ctx context.Context) ([]Project, error) {
	if err := p.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list projects: %w", err)
	}
	rs, err := p.db.pool.Query(ctx, `SELECT name, dir, created_at FROM projects ORDER BY name`)
	if err != nil {
		return nil, wrapErr("list projects", reach(err))
	}
	defer rs.Close()
	var out []Project
	for rs.Next() {
		var pr Project
		if err := rs.Scan(&pr.Name, &pr.Dir, &pr.CreatedAt); err != nil {
			return nil, wrapErr("list projects", err)
		}
		pr.CreatedAt = pr.CreatedAt.UTC()
		out = append(out, pr)
	}
	return out, wrapErr("list projects", reach(rs.Err()))
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

const memoryColumns = `id, project, text, created_at, updated_at`

func scanMemory(sc pgx.Row) (Memory, error) {
	var m Memory
	var id int64
	if err := sc.Scan(&id, &m.Project, &m.Text, &m.CreatedAt, &m.UpdatedAt); err != nil {
		return Memory{}, err
	}
	m.ID = "m" + strconv.FormatInt(id, 10)
	m.CreatedAt, m.UpdatedAt = m.CreatedAt.UTC(), m.UpdatedAt.UTC()
	return m, nil
}

// List returns a scope's memories, newest first; limit 0 means all.
func (s *Memories) List(ctx context.Context, project string, limit int) ([]Memory, error) {
	if err := s.db.checkOpen(); err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rs, err := s.db.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories WHERE project = $1 ORDER BY updated_at DESC, id DESC LIMIT $2`, project, lim)
	if err != nil {
		return nil, wrapErr("list memories", reach(err))
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
	return out, wrapErr("list memories", reach(rs.Err()))
}

// Get returns a memory of the scope, or ErrNoMemory.
func (s *Memories) Get(ctx context.Context, project, id string) (Memory, error) {
	n, ok := memoryKey(id)
	if !ok {
		return Memory{}, fmt.Errorf("get memory %q: %w", id, ErrNoMemory)
	}
	m, err := scanMemory(s.db.pool.QueryRow(ctx, `SELECT `+memoryColumns+` FROM memories WHERE id = $1 AND project = $2`, n, project))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, fmt.Errorf("get memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("get memory "+id, reach(err))
}

// Put creates a memory in a scope (id "") or replaces one of its text.
func (s *Memories) Put(ctx context.Context, project, id, text string) (Memory, error) {
	if err := s.db.checkOpen(); err != nil {
		return Memory{}, fmt.Errorf("write memory: %w", err)
	}
	now := s.db.now()
	if id == "" {
		m, err := scanMemory(s.db.pool.QueryRow(ctx, `INSERT INTO memories (project, text, created_at, updated_at) VALUES ($1, $2, $3, $3)
RETURNING `+memoryColumns, project, text, now))
		return m, wrapErr("write memory", reach(err))
	}
	n, ok := memoryKey(id)
	if !ok {
		return Memory{}, fmt.Errorf("write memory %q: %w", id, ErrNoMemory)
	}
	m, err := scanMemory(s.db.pool.QueryRow(ctx, `UPDATE memories SET text = $1, updated_at = $2 WHERE id = $3 AND project = $4
RETURNING `+memoryColumns, text, now, n, project))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, fmt.Errorf("write memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("write memory "+id, reach(err))
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
	m, err := scanMemory(s.db.pool.QueryRow(ctx, `DELETE FROM memories WHERE id = $1 AND project = $2 RETURNING `+memoryColumns, n, project))
	if errors.Is(err, pgx.ErrNoRows) {
		return Memory{}, fmt.Errorf("delete memory %s: %w", id, ErrNoMemory)
	}
	return m, wrapErr("delete memory "+id, reach(err))
}
