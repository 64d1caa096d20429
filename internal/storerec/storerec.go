// Package storerec holds the records internal/sqlite and internal/postgres
// both keep: feed events, webhook deliveries, projects, memories and
// scheduled jobs. The stores differ in SQL, not in what they return, so
// they name these types (by alias) and the composition root adapts one
// set of them to its consumers instead of one set per store.
//
// IDRange is the one piece of logic they share: the key range an id
// prefix selects.
//
// It imports nothing of meka's.
package storerec

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Errors both stores return, for errors.Is.
var (
	ErrNoMemory     = errors.New("no such memory")
	ErrJobNotFound  = errors.New("job not found")
	ErrJobAmbiguous = errors.New("job id prefix is ambiguous")
	ErrTooManyJobs  = errors.New("session has too many jobs")
)

// IDRange returns the ids, sessions' or jobs' (lower-case UUIDs), that
// begin with prefix, case insensitive, as the key range [lo, hi): every
// such id sorts bytewise from prefix up to prefix with its last byte
// incremented, so a primary-key index answers the query. ok is false for
// an empty prefix or one no UUID can begin with.
func IDRange(prefix string) (lo, hi string, ok bool) {
	p := strings.ToLower(prefix)
	if p == "" || strings.Trim(p, "0123456789abcdef-") != "" {
		return "", "", false
	}
	return p, p[:len(p)-1] + string(p[len(p)-1]+1), true
}

// FeedEntry is an event to store in the feed.
type FeedEntry struct {
	SessionID string
	Turn      int64
	Type      string
	Data      json.RawMessage
}

// FeedEvent is a stored event: an entry with its id and time.
type FeedEvent struct {
	ID int64
	FeedEntry
	Time time.Time
}

// Delivery is one event owed to one webhook endpoint.
type Delivery struct {
	ID       int64
	Endpoint string
	Attempt  int
	Event    FeedEvent
}

// Project is a name sessions can be on.
type Project struct {
	Name      string
	Dir       string
	CreatedAt time.Time
}

// Memory is one note.
type Memory struct {
	// ID is "m" and a number, unique across scopes.
	ID string
	// Project is the scope: a project's name, or "" for the user's own.
	Project   string
	Text      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Job is a scheduled job as the store keeps it. Times are UTC, to the
// microsecond; a zero time is unset.
type Job struct {
	ID        string
	SessionID string
	Prompt    string
	// Kind is "every", "cron" or "once".
	Kind string
	// Spec is the interval as written or the cron expression; empty for
	// a one-shot.
	Spec     string
	Interval time.Duration
	Zone     string
	Cwd      string
	// Gate is the gate as JSON; empty when the job is ungated.
	Gate string
	// Level is the session's level, by name, when the job was created.
	Level string
	// Baseline is the gate's last observation, when HasBaseline.
	Baseline    string
	HasBaseline bool
	NextAt      time.Time
	CreatedAt   time.Time
	LastFiredAt time.Time
	// LeaseOwner holds the current occurrence until LeaseUntil; empty
	// when nobody does.
	LeaseOwner   string
	LeaseUntil   time.Time
	FailedClaims int
	// Held says why the job is parked; empty when it is not.
	Held string
	// Isolation is "worktree" for a job whose turns each run in a fresh
	// git worktree of the session's workspace; empty otherwise.
	Isolation string
}

// Claim asks for the leases on due occurrences.
type Claim struct {
	IDs   []string
	Owner string
	// Now is the claimant's clock; Until is when its lease runs out.
	Now, Until time.Time
	// MaxFailed parks a job instead of claiming it once this many of its
	// claims have ended in neither a delivery nor a handback; 0 never
	// parks. Held is the reason then recorded.
	MaxFailed int
	Held      string
}

// Advance moves a job the caller holds the lease on to its next
// occurrence and ends the lease: the occurrence was delivered, or
// declined and spent. The failed-claims count starts over.
type Advance struct {
	NextAt time.Time
	// FiredAt, when set, records a delivered turn.
	FiredAt time.Time
	// Baseline, when set, replaces the gate's stored observation.
	Baseline *string
}

// What a spend query groups by.
const (
	SpendBySession = "session"
	SpendByProject = "project"
	SpendByDay     = "day"
	SpendByModel   = "model"
)

// SpendQuery asks a store for the tokens and cost its model calls
// recorded (assistant rows; a fork's copies of its source's rows are not
// counted twice).
type SpendQuery struct {
	// Since bounds the calls counted; zero counts every one.
	Since time.Time
	// By is one of the SpendBy constants.
	By string
	// Offset is the seconds east of UTC days begin at, for SpendByDay.
	Offset int
}

// SpendGroup is the spend of one group. Key is the session id, project
// name, model, or for days the day's number since the Unix epoch (in the
// query's offset); Label is a session's title.
type SpendGroup struct {
	Key        string
	Label      string
	Calls      int64
	Input      int64
	CacheRead  int64
	CacheWrite int64
	Output     int64
	Cost       float64
}
