// Package session defines a session's log: its sealed row types, the Store
// contract every database implements (with a conformance suite in
// sessiontest), the lock that keeps two processes from writing one session,
// and the fold that derives state (checklists, plans, usage) by replaying
// rows from the latest compaction checkpoint.
//
// It imports only model; no SQL driver is imported here.
package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Meta describes a session.
type Meta struct {
	ID string `json:"id"`
	// Title is the first user message, cut to 200 characters.
	Title string `json:"title"`
	// Cwd is canonical: absolute, symlinks resolved.
	Cwd            string   `json:"cwd"`
	AdditionalDirs []string `json:"additional_dirs,omitempty"`
	Profile        string   `json:"profile,omitempty"`
	Project        string   `json:"project,omitempty"`
	// Permission is the session's level by name (see package permission).
	Permission string `json:"permission"`
	// Approvals records whether a call above the level is put to a person,
	// switched like the level and restored with it.
	Approvals bool `json:"approvals,omitempty"`
	// ParentID is set for a sub-agent's session.
	ParentID string `json:"parent_id,omitempty"`
	// ParentCallID is the parent's agent_spawn call that created a
	// sub-agent's session; Agent names the definition it runs, if any.
	// Both are fixed at creation.
	ParentCallID string `json:"parent_call_id,omitempty"`
	Agent        string `json:"agent,omitempty"`
	// ForkedAt is the last turn a fork copied from the session it was
	// forked from; 0 for a session that is no fork. Plans that a fork
	// starts afresh (update_plan) ignore the turns up to it.
	ForkedAt  int64     `json:"forked_at,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TitleLimit bounds a session's title, in characters.
const TitleLimit = 200

// Title cuts a first user message to a session title.
func Title(s string) string {
	r := []rune(s)
	if len(r) > TitleLimit {
		r = r[:TitleLimit]
	}
	return string(r)
}

// ForkTitle is the title of a fork of the session id titled title
// (through turn through, or whole when through < 0), so that a listing
// tells the copy from its source.
func ForkTitle(id, title string, through int64) string {
	if len(id) > 8 {
		id = id[:8]
	}
	at := ""
	if through >= 0 {
		at = fmt.Sprintf(" at turn %d", through)
	}
	return Title(fmt.Sprintf("fork of %s%s: %s", id, at, title))
}

// Errors stores return, to be tested with errors.Is.
var (
	ErrNotFound  = errors.New("session not found")
	ErrAmbiguous = errors.New("session id prefix is ambiguous")
	ErrHeld      = errors.New("session is held by another process")
	ErrNotHeld   = errors.New("session lock is not held")
)

// Holder identifies a process holding a session.
type Holder struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Token tells two holders with the same pid and host apart (a process
	// that reopened a session it held).
	Token string `json:"token"`
}

func (h Holder) String() string { return fmt.Sprintf("pid %d on %s", h.PID, h.Host) }

// HeldError reports the process that holds a session.
type HeldError struct {
	SessionID string
	Holder    Holder
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("session %s is held by meka %s", e.SessionID, e.Holder)
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// ListOptions filters and pages List.
type ListOptions struct {
	// Cwd, when set, keeps only sessions with this canonical cwd.
	Cwd string
	// Limit bounds one page; zero means 50.
	Limit int
	// Cursor continues a previous listing; empty starts at the newest.
	Cursor string
	// SubAgents includes sessions with a parent.
	SubAgents bool
	// Parent, when set, keeps only the sub-agent sessions of this session
	// (SubAgents is implied).
	Parent string
}

// Page is one page of a listing, newest updated first.
type Page struct {
	Sessions []Meta
	// Next continues the listing; empty on the last page.
	Next string
}

// Store persists sessions and their rows. Implementations are safe for
// concurrent use, including by several processes sharing one database.
type Store interface {
	// Create stores a new session. ID, CreatedAt and UpdatedAt are filled in
	// when empty.
	Create(ctx context.Context, m Meta) (Meta, error)
	// Get returns a session by full id or any unique prefix.
	Get(ctx context.Context, idOrPrefix string) (Meta, error)
	// Update replaces the mutable fields of a session: title, cwd,
	// additional dirs, profile, project, permission.
	Update(ctx context.Context, m Meta) error
	List(ctx context.Context, opts ListOptions) (Page, error)
	// Latest returns the most recently updated top-level session in cwd.
	Latest(ctx context.Context, cwd string) (Meta, error)

	// Append writes rows to a session in one transaction, assigning their
	// sequence numbers and times, and returns them as stored.
	Append(ctx context.Context, sessionID string, rows []Row) ([]Row, error)
	// Rows returns a session's rows with Seq >= from, in order.
	Rows(ctx context.Context, sessionID string, from int64) ([]Row, error)
	// Tail returns the last n rows of a session, in order.
	Tail(ctx context.Context, sessionID string, n int) ([]Row, error)
	// Fork copies a session and its rows up to and including turn
	// throughTurn (all rows when throughTurn < 0) to a new session with no
	// link back.
	Fork(ctx context.Context, sessionID string, throughTurn int64) (Meta, error)
	// Rewind drops the rows of every turn after keepThroughTurn.
	Rewind(ctx context.Context, sessionID string, keepThroughTurn int64) error
	// Delete removes a session and its rows.
	Delete(ctx context.Context, sessionID string) error

	// Lock takes a session for writing. It fails with a *HeldError when a
	// live holder has it; a holder that died (its process is gone, or its
	// lease lapsed) is taken over.
	Lock(ctx context.Context, sessionID string, h Holder) (Lock, error)
	// Holders says who holds each of ids, by the rule Lock applies: a
	// lapsed lease, or a holder on this host whose process is gone,
	// holds nothing. Ids nobody holds are absent; tokens are left out
	// (see HeldError). One query, for a listing.
	Holders(ctx context.Context, ids []string) (map[string]Holder, error)

	Close() error
}

// Restorer is a Store that can append rows with the times they carry,
// for an import that restores a session as it was.
type Restorer interface {
	// Restore appends rows as Append does, but each row keeps its Time;
	// a row without one gets the append's.
	Restore(ctx context.Context, sessionID string, rows []Row) ([]Row, error)
}

// Lock is a held session lock. The store keeps it alive until Release.
type Lock interface {
	Holder() Holder
	// Release gives the session up. It is safe to call more than once.
	Release(ctx context.Context) error
}
