package schedule

import (
	"context"
	"errors"
	"time"

	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Errors a Store returns (wrapped), to be tested with errors.Is.
var (
	ErrNotFound    = errors.New("job not found")
	ErrAmbiguous   = errors.New("job id prefix is ambiguous")
	ErrTooManyJobs = errors.New("session has too many jobs")
)

// Store keeps jobs. Implementations are safe for concurrent use, including
// by several processes sharing one database, and make every change to a
// lease a single conditional write.
type Store interface {
	// Create stores a new job (ID and CreatedAt filled in when empty),
	// refusing with ErrTooManyJobs when the session already has maxJobs
	// (0: no limit), and with session.ErrNotFound for an unknown session.
	Create(ctx context.Context, j Job, maxJobs int) (Job, error)
	// Get returns a job by full id or unique prefix: ErrNotFound,
	// ErrAmbiguous.
	Get(ctx context.Context, idOrPrefix string) (Job, error)
	// WithPrefix returns up to limit jobs whose id begins with prefix.
	WithPrefix(ctx context.Context, prefix string, limit int) ([]Job, error)
	// List returns a session's jobs by next occurrence, or every job by
	// session when sessionID is empty.
	List(ctx context.Context, sessionID string) ([]Job, error)
	// Due returns up to limit unparked jobs due at now that no unexpired
	// lease holds, most overdue first.
	Due(ctx context.Context, now time.Time, limit int) ([]Job, error)
	// Claim takes the leases on due occurrences (see Claim) and returns
	// the jobs it wrote: those claimed, with LeaseOwner set to c.Owner,
	// and those it parked, with Held set. Jobs it did not get are left
	// out.
	Claim(ctx context.Context, c Claim) ([]Job, error)
	// Advance moves a job owner holds to its next occurrence and ends the
	// lease; Release ends the lease with nothing else changed; Retire
	// deletes a one-shot owner holds. Each reports whether owner still
	// held the job: a job canceled meanwhile stays gone.
	Advance(ctx context.Context, id, owner string, a Advance) (bool, error)
	// Renew extends owner's lease to until, reporting whether owner still
	// holds the job.
	Renew(ctx context.Context, id, owner string, until time.Time) (bool, error)
	Release(ctx context.Context, id, owner string) (bool, error)
	Retire(ctx context.Context, id, owner string) (bool, error)
	// Delete removes a job by full id whoever holds it, reporting whether
	// it existed: a cancel always wins.
	Delete(ctx context.Context, id string) (bool, error)
}

// Claim asks for the leases on due occurrences. A job is claimed only
// while its occurrence is due at Now and no unexpired lease holds it, by
// a conditional write per job. A lease found expired is a claim that
// ended in neither delivery nor handback: it is counted, and at MaxFailed
// the job is parked with Held as the reason instead of being claimed.
type Claim struct {
	IDs        []string
	Owner      string
	Now, Until time.Time
	MaxFailed  int
	Held       string
}

// Advance is what ends a delivered or spent occurrence.
type Advance struct {
	NextAt time.Time
	// FiredAt, when set, records a delivered turn.
	FiredAt time.Time
	// Baseline, when set, replaces the gate's stored observation.
	Baseline *string
}

// Firer is the host side of the scheduler: the process that holds
// sessions live and runs their turns. Implementations are safe for
// concurrent use.
type Firer interface {
	// Holds reports whether this process fires the session's jobs: it
	// holds the session live, or, for a daemon, nobody else does and it
	// has just taken the session. It is asked before an occurrence is
	// claimed, so a session another process holds costs no claim and no
	// gate.
	Holds(ctx context.Context, sessionID string) bool
	// Level returns the session's permission level now; ok is false when
	// it cannot be established.
	Level(sessionID string) (l permission.Level, ok bool)
	// Tool resolves a tool of the session for a gate: the tool and the
	// level a call of it needs now, overrides applied; ok is false when
	// the tool is unavailable (unknown, or its server not connected).
	Tool(sessionID, name string) (t tool.Tool, needs permission.Level, ok bool)
	// Fire runs f.Message as a turn of the session and returns when the
	// turn has ended. delivered reports that the message reached the
	// session's log, which spends the occurrence; err then says why the
	// turn failed. A host that cannot take the session now (held
	// elsewhere, a turn running) returns an error wrapping ErrDeclined.
	Fire(ctx context.Context, sessionID string, f Firing) (delivered bool, err error)
}

// ErrDeclined is a host declining an occurrence it cannot take now; the
// occurrence is handed back and nothing is counted against the job.
var ErrDeclined = errors.New("host declined the job")

// Firing is one occurrence's turn.
type Firing struct {
	JobID   string
	Message session.UserMessage
	// Withdraw asks the host to take Message back out of the log when the
	// turn fails before any tool ran: a recurring job produces it again,
	// so an outage must not leave one unanswered prompt per occurrence.
	Withdraw bool
	// Isolation is the job's (IsolationWorktree or empty): the host runs
	// the turn in a fresh worktree of the session's workspace.
	Isolation string
}

// IsolationWorktree is a job whose every turn runs in a fresh git
// worktree of its session's workspace.
const IsolationWorktree = "worktree"
