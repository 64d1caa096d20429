package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// scheduling is the scheduler as a host uses it: the schedule tools and
// the [Scheduled] index in every session (extension), and, in a
// long-lived host, the loop that fires jobs (start).
//
// Wiring, in the composition root:
//
//	sc, err := g.newScheduling(cfg, db)   // nil when [schedule] enabled = false
//	host.Options{Extensions: append(extensions(cfg), sc.extension()...)}
//	sc.attach(h)                          // once the host exists
//	stop := sc.start(ctx)                 // meka acp, meka serve, the REPL
//	defer stop()
type scheduling struct {
	sched *schedule.Scheduler
	firer *hostFirer
}

// newScheduling builds the scheduler over db. It returns nil when
// [schedule] enabled is false: the tools are hidden and nothing fires,
// the jobs stay on disk.
func (g *globals) newScheduling(cfg *config.Config, db *database) (*scheduling, error) {
	sc := cfg.Schedule
	if !sc.Enabled {
		return nil, nil
	}
	f := &hostFirer{overrides: cfg.Tools.ToolPermissions, log: g.logger()}
	loc := sc.Location
	if loc == nil || sc.Timezone == "" {
		loc = localZone(g.getenv)
	}
	scrub := keyVariables(cfg)
	s, err := schedule.New(schedule.Options{
		Store:               db.Schedules(),
		Now:                 db.leaseClock,
		Wake:                db.wake,
		Firer:               f,
		PollInterval:        sc.PollInterval,
		MissedGrace:         sc.MissedGrace,
		GateTimeout:         sc.GateTimeout,
		ClaimLease:          sc.ClaimLease,
		MaxJobs:             sc.MaxJobs,
		MaxConsecutiveFires: sc.MaxConsecutiveFires,
		Location:            loc,
		ParseDuration:       config.ParseDuration,
		FormatDuration:      config.FormatDuration,
		Confined:            confined,
		ScrubNames:          scrub,
		Isolation: func(ctx context.Context, cwd string) error {
			o, err := g.worktreeOptions()
			if err == nil {
				err = o.CanCreate(ctx, cwd)
			}
			return err
		},
		Logger: g.logger(),
	})
	if err != nil {
		return nil, usageError("[schedule]: %v", err)
	}
	return &scheduling{sched: s, firer: f}, nil
}

// extension adds the schedule tools and the [Scheduled] index to a
// session; none when scheduling is off, and none to a sub-agent: a job
// on its session could never fire, since only its parent opens it.
func (sc *scheduling) extension() []host.ExtensionFunc {
	if sc == nil {
		return nil
	}
	return []host.ExtensionFunc{func(env host.Env) (host.Extension, error) {
		if env.Depth > 0 {
			return host.Extension{}, nil
		}
		return host.Extension{
			Tools:        sc.sched.Tools(),
			Contributors: []agent.RequestContributor{sc.sched.Contributor(env.SessionID, env.Level)},
		}, nil
	}}
}

// attach gives the scheduler the host whose sessions it fires.
func (sc *scheduling) attach(h *host.Host) {
	if sc != nil {
		sc.firer.h.Store(h)
	}
}

// takeUnheld makes this host a daemon's: it also fires the jobs of
// sessions no process holds, opening each for its turn (see hostFirer).
func (sc *scheduling) takeUnheld() {
	if sc != nil {
		sc.firer.daemon.Store(true)
	}
}

// start runs the scheduler loop until ctx ends or stop is called; stop
// waits for the loop (and a turn it is delivering) to end.
func (sc *scheduling) start(ctx context.Context) (stop func()) {
	if sc == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc.sched.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// confined reports whether shell_execute can be confined here, which
// admits it as a tool gate.
var confined = sync.OnceValue(func() bool {
	_, err := sandbox.Available(sandbox.ReadOnly)
	return err == nil
})

// localZone is the host's zone under its IANA name, so that a job created
// here reads the same on another machine: $TZ, else the /etc/localtime
// link, else time.Local as it is.
func localZone(getenv func(string) string) *time.Location {
	if tz := strings.TrimPrefix(getenv("TZ"), ":"); tz != "" {
		if loc, err := time.LoadLocation(tz); err == nil {
			return loc
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.LastIndex(target, "zoneinfo/"); i >= 0 {
			if loc, err := time.LoadLocation(filepath.ToSlash(target[i+len("zoneinfo/"):])); err == nil {
				return loc
			}
		}
	}
	return time.Local
}

// hostFirer fires jobs into the sessions a host holds open. A daemon's
// (meka serve) also takes a session nobody holds when one of its jobs
// comes due: it opens it, taking its lock, so the turn runs at the level
// the session records, and the host releases it after [serve]
// idle_timeout like a session a client opened. A session another live
// process holds stays its holder's.
type hostFirer struct {
	h         atomic.Pointer[host.Host]
	overrides map[string]permission.Level
	daemon    atomic.Bool
	log       *slog.Logger

	mu     sync.Mutex        // guards warned
	warned map[string]string // session id → the last failure to open it logged
}

var _ schedule.Firer = (*hostFirer)(nil)

func (f *hostFirer) session(id string) (*host.Session, bool) {
	h := f.h.Load()
	if h == nil {
		return nil, false
	}
	return h.Get(id)
}

func (f *hostFirer) Holds(ctx context.Context, id string) bool {
	if _, ok := f.session(id); ok {
		return true
	}
	h := f.h.Load()
	if h == nil || !f.daemon.Load() {
		return false
	}
	return f.take(ctx, h, id)
}

// take opens a session no process holds, for its due jobs; a sub-agent's
// session is its parent's to open, and one held elsewhere is left alone.
func (f *hostFirer) take(ctx context.Context, h *host.Host, id string) bool {
	meta, err := h.Store().Get(ctx, id)
	if err == nil && meta.ParentID != "" {
		return false
	}
	if err == nil {
		_, err = h.Open(ctx, id)
	}
	switch {
	case err == nil:
		f.noteOpen(id, "")
		f.log.Info("opened a session nobody held to fire its job", "session_id", id)
		return true
	case errors.Is(err, session.ErrHeld), ctx.Err() != nil:
		return false
	}
	// Said once per failure, not at every poll while it lasts.
	if f.noteOpen(id, err.Error()) {
		f.log.Warn("cannot open a session to fire its job; it waits", "session_id", id, "err", err)
	}
	return false
}

// noteOpen records the last failure to open a session ("" for none) and
// reports whether it changed.
func (f *hostFirer) noteOpen(id, failure string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warned[id] == failure {
		return false
	}
	if failure == "" {
		delete(f.warned, id)
		return true
	}
	if f.warned == nil {
		f.warned = make(map[string]string)
	}
	f.warned[id] = failure
	return true
}

func (f *hostFirer) Level(id string) (permission.Level, bool) {
	s, ok := f.session(id)
	if !ok {
		return permission.None, false
	}
	return s.Level(), true
}

func (f *hostFirer) Tool(id, name string) (tool.Tool, permission.Level, bool) {
	s, ok := f.session(id)
	if !ok {
		return nil, 0, false
	}
	t, ok := s.Tools().Get(name)
	if !ok {
		return nil, 0, false
	}
	if l, ok := f.overrides[name]; ok {
		return t, l, true
	}
	return t, t.Spec().Level, true
}

// withdrawer is what a session offers when it can take a failed turn's
// prompt back out of its log.
func (f *hostFirer) Fire(ctx context.Context, id string, fr schedule.Firing) (bool, error) {
	s, ok := f.session(id)
	if !ok {
		return false, fmt.Errorf("session %s is not open here: %w", id, schedule.ErrDeclined)
	}
	if fr.Isolation == schedule.IsolationWorktree {
		return f.fireInWorktree(ctx, s, fr)
	}
	res, err := s.Run(ctx, fr.Message)
	if errors.Is(err, agent.ErrBusy) || errors.Is(err, host.ErrClosed) {
		return false, fmt.Errorf("session %s: %w", id, schedule.ErrDeclined)
	}
	// What the turn left in the log says whether it started and whether a
	// tool ran; events would also show another turn's.
	started, toolRan := turnFacts(s.Engine().Rows(), res.Turn)
	if !started {
		if err == nil {
			return false, fmt.Errorf("session %s: %w", id, schedule.ErrDeclined)
		}
		return false, err
	}
	withdrawn := false
	if res.Stop == agent.StopFailed && fr.Withdraw && !toolRan {
		if werr := s.Withdraw(context.WithoutCancel(ctx), res.Turn); werr != nil {
			err = errors.Join(err, fmt.Errorf("withdraw the prompt: %w", werr))
		} else {
			withdrawn = true
		}
	}
	if err != nil || res.Stop == agent.StopFailed {
		// A front door that printed the prompt cannot un-print it, so the
		// notice says it was taken back.
		desc := fmt.Sprint(err)
		if withdrawn {
			desc += "; its prompt was withdrawn from the log and the job runs again at its next time"
		}
		s.Announce(session.Notice{Severity: session.SeverityWarning,
			Title: "Scheduled job " + schedule.ShortID(fr.JobID) + " failed", Description: desc})
	}
	return true, err
}

// turnFacts reports whether turn's input reached the log and whether one
// of its tool calls ran (a refused call did not).
func turnFacts(rows []session.Row, turn int64) (started, toolRan bool) {
	for i := len(rows) - 1; i >= 0 && rows[i].Turn >= turn; i-- {
		if rows[i].Turn != turn {
			continue
		}
		started = true
		if tr, ok := rows[i].Entry.(session.ToolResult); ok && tr.Status != session.StatusRefused {
			toolRan = true
		}
	}
	return started, toolRan
}

// fireInWorktree runs an isolated job's turn in a sub-agent session of s
// working in a fresh worktree, and tells s's front doors where its work
// is. The sub-agent's session keeps the turn (meka sessions list
// --children); it is closed once the turn is over.
func (f *hostFirer) fireInWorktree(ctx context.Context, s *host.Session, fr schedule.Firing) (bool, error) {
	short := schedule.ShortID(fr.JobID)
	c, res, wt, err := s.RunInWorktree(ctx, fr.Message, "scheduled job "+short)
	if c == nil {
		return false, err
	}
	defer func() {
		if h := f.h.Load(); h != nil {
			_ = h.CloseSession(context.WithoutCancel(ctx), c.ID())
		}
	}()
	if started, _ := turnFacts(c.Engine().Rows(), res.Turn); !started {
		if err == nil {
			err = fmt.Errorf("the sub-agent's turn did not start")
		}
		return false, err
	}
	n := session.Notice{Severity: session.SeverityInfo, Title: "Scheduled job " + short + " ran in a worktree"}
	switch {
	case wt.Path == "":
		n.Description = fmt.Sprintf("in the sub-agent session %s; what its worktree holds could not be told", c.ID())
	case wt.Kept:
		n.Description = fmt.Sprintf("its changes are in %s (branch %s), kept; its session is %s.\n%s", wt.Path, wt.Branch, c.ID(), wt.DiffStat)
	default:
		n.Description = fmt.Sprintf("it changed nothing, so its worktree was removed; its session is %s", c.ID())
	}
	if err != nil || res.Stop == agent.StopFailed {
		n.Severity, n.Title = session.SeverityWarning, "Scheduled job "+short+" failed in a worktree"
		n.Description = fmt.Sprint(err) + "; " + n.Description
	}
	s.Announce(n)
	return true, err
}
