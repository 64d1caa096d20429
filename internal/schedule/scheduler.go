package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/permission"
)

// Defaults for Options, as [schedule] documents them.
const (
	DefaultPollInterval        = 10 * time.Second
	DefaultMissedGrace         = 24 * time.Hour
	DefaultGateTimeout         = 30 * time.Second
	DefaultMaxJobs             = 50
	DefaultMaxConsecutiveFires = 5
	DefaultClaimLease          = time.Hour
)

// MaxFailedClaims is how many claims may end in neither a delivery nor a
// handback before the job is parked.
const MaxFailedClaims = 3

// dueBatch bounds the due jobs one sweep reads.
const dueBatch = 1000

// ErrLeaseTooShort is returned by New for a claim lease that does not
// outlast a gate probe.
var ErrLeaseTooShort = errors.New("claim_lease must be longer than gate_timeout")

// Options configure a Scheduler. Zero values mean the defaults.
type Options struct {
	Store Store
	// Firer is the host that runs turns; nil serves the tools and the
	// [Scheduled] index only, and Sweep fires nothing.
	Firer Firer
	// Owner names this scheduler on the leases it takes; empty means
	// host:pid:random.
	Owner string

	PollInterval        time.Duration
	MissedGrace         time.Duration
	GateTimeout         time.Duration
	ClaimLease          time.Duration
	MaxJobs             int
	MaxConsecutiveFires int
	// Location is the zone new cron jobs are read in and times are shown
	// in; nil means time.Local.
	Location *time.Location

	// ParseDuration reads every and in (config.ParseDuration);
	// FormatDuration writes durations back (config.FormatDuration). Nil
	// means the time package's.
	ParseDuration  func(string) (time.Duration, error)
	FormatDuration func(time.Duration) string
	// Confined reports whether shell_execute can be confined here, which
	// admits it as a tool gate; nil means it cannot.
	Confined func() bool
	// ScrubNames are the provider key variables removed, with the
	// sandbox's patterns, from a command gate's environment.
	ScrubNames []string
	// Command builds a command gate's process; nil runs it through the
	// sandbox's runner (see gateCommand). Tests replace it.
	Command func(ctx context.Context, dir, command string) (*exec.Cmd, error)

	// Isolation checks that the turns of a job created in cwd can each
	// have a git worktree of it (isolation "worktree"); nil refuses such
	// jobs.
	Isolation func(ctx context.Context, cwd string) error

	// Wake, when set, is called by Run with its context; a receive on the
	// channel it returns sweeps at once rather than at the next poll (a
	// job created on another host sharing the store).
	Wake func(ctx context.Context) <-chan struct{}

	Now    func() time.Time
	Logger *slog.Logger
}

// Scheduler runs a host's share of the jobs in a Store and serves the
// schedule tools. It is safe for concurrent use.
type Scheduler struct {
	opts Options
	log  *slog.Logger

	sweeping sync.Mutex // one sweep at a time
	fired    atomic.Pointer[func(Fired)]

	mu       sync.Mutex             // guards failures and withheld
	failures map[string]gateFailure // job id → its run of gate failures
	withheld map[string]string      // job id → the reason last warned about
}

// New returns a scheduler. It starts nothing; Run sweeps.
func New(opts Options) (*Scheduler, error) {
	if opts.Store == nil {
		return nil, errors.New("new scheduler: no store")
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MissedGrace <= 0 {
		opts.MissedGrace = DefaultMissedGrace
	}
	if opts.GateTimeout <= 0 {
		opts.GateTimeout = DefaultGateTimeout
	}
	if opts.ClaimLease <= 0 {
		opts.ClaimLease = DefaultClaimLease
	}
	if opts.ClaimLease <= opts.GateTimeout {
		return nil, fmt.Errorf("new scheduler: %w (claim_lease %v, gate_timeout %v)", ErrLeaseTooShort, opts.ClaimLease, opts.GateTimeout)
	}
	if opts.MaxJobs <= 0 {
		opts.MaxJobs = DefaultMaxJobs
	}
	if opts.MaxConsecutiveFires <= 0 {
		opts.MaxConsecutiveFires = DefaultMaxConsecutiveFires
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.ParseDuration == nil {
		opts.ParseDuration = time.ParseDuration
	}
	if opts.FormatDuration == nil {
		opts.FormatDuration = time.Duration.String
	}
	if opts.Confined == nil {
		opts.Confined = func() bool { return false }
	}
	if opts.Command == nil {
		opts.Command = gateCommand(opts.ScrubNames)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		var b [6]byte
		rand.Read(b[:])
		opts.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return &Scheduler{
		opts: opts, log: opts.Logger,
		failures: make(map[string]gateFailure),
		withheld: make(map[string]string),
	}, nil
}

// Owner is the name this scheduler takes leases under.
func (s *Scheduler) Owner() string { return s.opts.Owner }

// Location is the zone new jobs are given.
func (s *Scheduler) Location() *time.Location { return s.opts.Location }

func (s *Scheduler) formatDuration(d time.Duration) string { return s.opts.FormatDuration(d) }

// Run sweeps at once and then every PollInterval until ctx ends. Sweep
// errors are logged; Run returns nil when ctx ends.
func (s *Scheduler) Run(ctx context.Context) error {
	if s.opts.Firer == nil {
		return errors.New("run scheduler: no firer")
	}
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	var wake <-chan struct{} // nil blocks forever
	if s.opts.Wake != nil {
		wake = s.opts.Wake(ctx)
	}
	for {
		if _, err := s.Sweep(ctx, s.opts.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("schedule sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-wake:
		}
	}
}

// SweepResult counts what one sweep did with the due jobs it read.
type SweepResult struct {
	Due      int // due jobs read
	Skipped  int // sessions this host does not hold
	HeldOver int // past max_consecutive_fires for their session
	Withheld int // not authorised to fire now
	Lost     int // claimed by another host first
	Parked   int // parked by this sweep's claim
	Declined int // gate said no, or could not run
	Dropped  int // one-shots past missed_grace
	Fired    int // turns delivered
	Returned int // handed back undelivered
}

// Sweep runs the occurrences due at now that this host may take, most
// overdue first: it claims them all in one conditional write, then for
// each evaluates its gate and fires its turn. At most MaxConsecutiveFires
// of one session's jobs are taken per sweep; the rest wait for the next
// with their occurrence and baseline intact and run no gate. Sweeps do
// not overlap: a second call waits for the first.
func (s *Scheduler) Sweep(ctx context.Context, now time.Time) (SweepResult, error) {
	var res SweepResult
	if s.opts.Firer == nil {
		return res, nil
	}
	s.sweeping.Lock()
	defer s.sweeping.Unlock()
	due, err := s.opts.Store.Due(ctx, now, dueBatch)
	if err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	res.Due = len(due)

	// Decide what to take before writing anything: jobs of sessions this
	// host does not hold are left alone, a withheld one-shot is kept
	// as it is, and each session gets its batch.
	type pick struct {
		j        Job
		withheld bool // a recurring occurrence to spend unfired
	}
	var picks []pick
	taken := make(map[string]int)
	for _, j := range due {
		if !s.opts.Firer.Holds(ctx, j.SessionID) {
			res.Skipped++
			continue
		}
		level, ok := s.opts.Firer.Level(j.SessionID)
		if !ok {
			res.Skipped++
			continue
		}
		if s.withhold(j, level) {
			res.Withheld++
			if j.Recurring() {
				picks = append(picks, pick{j, true})
			}
			continue
		}
		if taken[j.SessionID] >= s.opts.MaxConsecutiveFires {
			res.HeldOver++
			continue
		}
		taken[j.SessionID]++
		picks = append(picks, pick{j, false})
	}
	if len(picks) == 0 {
		return res, nil
	}
	ids := make([]string, len(picks))
	for i, p := range picks {
		ids[i] = p.j.ID
	}
	claimed, err := s.opts.Store.Claim(ctx, s.lease(ids, now))
	if err != nil {
		return res, fmt.Errorf("sweep: %w", err)
	}
	got := make(map[string]Job, len(claimed))
	for _, j := range claimed {
		got[j.ID] = j
	}

	var errs []error
	for _, p := range picks {
		j, ok := got[p.j.ID]
		switch {
		case !ok:
			res.Lost++
		case j.Held != "":
			res.Parked++
			s.log.Warn("job parked", "job", ShortID(j.ID), "session_id", j.SessionID, "reason", j.Held)
		case ctx.Err() != nil:
			// Stopping: hand back what this sweep has not reached.
			res.Returned++
			s.release(j)
		case p.withheld:
			// A withheld recurring job declines its occurrence: spent.
			if err := s.spend(ctx, j, now, nil); err != nil {
				errs = append(errs, err)
			}
		default:
			if _, err := s.occurrence(ctx, j, now, &res); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return res, errors.Join(errs...)
}

// withhold decides whether j cannot fire at level, and logs a change.
func (s *Scheduler) withhold(j Job, level permission.Level) bool {
	reason := s.withheldNow(j, level)
	if s.noteWithheld(j.ID, reason) {
		if reason != "" {
			s.log.Warn("job withheld: NOT FIRING", "job", ShortID(j.ID), "session_id", j.SessionID, "reason", reason)
		} else {
			s.log.Info("job restored: it can fire again", "job", ShortID(j.ID), "session_id", j.SessionID)
		}
	}
	return reason != ""
}

// lease is the claim on ids' occurrences at now.
func (s *Scheduler) lease(ids []string, now time.Time) Claim {
	return Claim{
		IDs: ids, Owner: s.opts.Owner, Now: now, Until: now.Add(s.opts.ClaimLease),
		MaxFailed: MaxFailedClaims,
		Held: fmt.Sprintf("its last %d claims ended in neither a delivered turn nor a handback (a host died mid-delivery, or a one-shot's gate could not be evaluated); cancel it or create it again",
			MaxFailedClaims),
	}
}
