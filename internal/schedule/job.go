package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"meka.dev/meka/internal/schedule/cron"
)

// Job kinds.
const (
	KindEvery = "every" // a fixed interval
	KindCron  = "cron"  // a five-field cron expression in the job's zone
	KindOnce  = "once"  // one instant, then the job is retired
)

// Job is a scheduled job as stored. Times are UTC; a zero time is unset.
// Its fields match internal/sqlite's Job one for one, so the composition
// root converts between them with a type conversion.
type Job struct {
	ID        string
	SessionID string
	Prompt    string
	// Kind is KindEvery, KindCron or KindOnce.
	Kind string
	// Spec is the interval as written or the cron expression; empty for
	// a one-shot.
	Spec     string
	Interval time.Duration
	// Zone is the IANA zone cron expressions are read and times shown in.
	Zone string
	// Cwd is the session's directory when the job was created; command
	// gates run there.
	Cwd string
	// Gate is the gate as JSON (see Gate); empty when ungated.
	Gate string
	// Level is the session's level, by name, when the job was created:
	// the authority a gate was granted with. Empty reads as none.
	Level string
	// Baseline is the gate's last observation, when HasBaseline.
	Baseline    string
	HasBaseline bool
	// NextAt is the occurrence the job waits for.
	NextAt      time.Time
	CreatedAt   time.Time
	LastFiredAt time.Time
	// LeaseOwner holds the occurrence until LeaseUntil; empty when free.
	LeaseOwner   string
	LeaseUntil   time.Time
	FailedClaims int
	// Held says why the job is parked; empty when it is not.
	Held string
	// Isolation is "worktree" for a job whose turns each run in a fresh
	// git worktree of the session's workspace; empty otherwise.
	Isolation string
}

// ShortID is the first segment of a job's UUID, how it is usually shown.
func ShortID(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	return id
}

// Recurring reports whether the job has a next occurrence after this one.
func (j Job) Recurring() bool { return j.Kind != KindOnce }

// Location returns the job's zone, UTC when it cannot be loaded.
func (j Job) Location() *time.Location {
	if j.Zone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(j.Zone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ParsedGate decodes the job's gate; nil for an ungated job.
func (j Job) ParsedGate() (*Gate, error) {
	if j.Gate == "" {
		return nil, nil
	}
	g, err := ParseGate([]byte(j.Gate))
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", ShortID(j.ID), err)
	}
	return g, nil
}

// Describe says when the job fires, as a person reads it: "every 30m",
// `cron "0 9 * * 1-5" (Europe/Berlin)`, "once at 2026-08-11 15:22 CEST".
func (j Job) Describe() string {
	switch j.Kind {
	case KindEvery:
		return "every " + j.Spec
	case KindCron:
		return fmt.Sprintf("cron %q (%s)", j.Spec, j.Zone)
	}
	return "once at " + FormatTime(j.NextAt, j.Location())
}

// Brief is Describe for a table's cell: "every 30m", "cron 0 9 * * 1-5",
// "once 2026-08-11 15:22", without the zone.
func (j Job) Brief() string {
	switch j.Kind {
	case KindEvery:
		return "every " + j.Spec
	case KindCron:
		return "cron " + j.Spec
	}
	return "once " + j.NextAt.In(j.Location()).Format("2006-01-02 15:04")
}

// GateKind names the job's gate for a table's cell: "shell" or "tool" by
// its check, "-" for none, "?" for one that cannot be read.
func (j Job) GateKind() string {
	g, err := j.ParsedGate()
	switch {
	case err != nil:
		return "?"
	case g == nil:
		return "-"
	case g.Check.IsCommand():
		return "shell"
	}
	return "tool"
}

// FormatTime renders t for people in loc, to the minute, with the zone's
// abbreviation: "2026-08-11 15:22 CEST".
func FormatTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04 MST")
}

// ErrNoNextFire reports a cron job with no occurrence left in its zone.
var ErrNoNextFire = errors.New("schedule has no next fire")

// nextAfter returns a recurring job's first occurrence strictly after t.
func nextAfter(j Job, t time.Time) (time.Time, error) {
	switch j.Kind {
	case KindEvery:
		if j.Interval <= 0 {
			return time.Time{}, fmt.Errorf("job %s: interval %v is not positive", ShortID(j.ID), j.Interval)
		}
		return t.Add(j.Interval), nil
	case KindCron:
		s, err := cron.Parse(j.Spec)
		if err != nil {
			return time.Time{}, fmt.Errorf("job %s: %w", ShortID(j.ID), err)
		}
		next, ok := s.Next(t, j.Location())
		if !ok {
			return time.Time{}, fmt.Errorf("job %s: %w after %s", ShortID(j.ID), ErrNoNextFire, t.Format(time.RFC3339))
		}
		return next.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("job %s: a %s job has no next occurrence", ShortID(j.ID), j.Kind)
}

// maxMissedCount bounds how far a sweep counts the missed occurrences of
// a cron job; a count past it is reported as "more than".
const maxMissedCount = 100_000

// occurrences counts a recurring job's occurrences from its due one
// (j.NextAt, which is <= now) through now, and says whether the count
// stopped at maxMissedCount.
func occurrences(j Job, now time.Time) (n int, capped bool) {
	if now.Before(j.NextAt) {
		return 0, false
	}
	switch j.Kind {
	case KindEvery:
		if j.Interval <= 0 {
			return 1, false
		}
		k := int64(now.Sub(j.NextAt)/j.Interval) + 1
		if k > maxMissedCount {
			return maxMissedCount, true
		}
		return int(k), false
	case KindCron:
		s, err := cron.Parse(j.Spec)
		if err != nil {
			return 1, false
		}
		loc := j.Location()
		n, t := 1, j.NextAt
		for n < maxMissedCount {
			next, ok := s.Next(t, loc)
			if !ok || next.After(now) {
				return n, false
			}
			n, t = n+1, next
		}
		return n, true
	}
	return 1, false
}
