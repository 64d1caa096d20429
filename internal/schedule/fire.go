package schedule

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// lateAfter is how late a one-shot must be before its turn is told so.
const lateAfter = time.Minute

// occurrence handles one due job this host has claimed, and reports
// whether a turn was delivered. An error is an infrastructure failure
// worth logging; decisions about the job are logged here.
func (s *Scheduler) occurrence(ctx context.Context, j Job, now time.Time, res *SweepResult) (bool, error) {
	log := s.log.With("job", ShortID(j.ID), "session_id", j.SessionID)
	// Earlier turns of this sweep may have taken a while: look again at
	// whether the job may run, and keep the lease fresh.
	level, ok := s.opts.Firer.Level(j.SessionID)
	if !ok || !s.opts.Firer.Holds(ctx, j.SessionID) {
		res.Returned++
		s.release(j)
		return false, nil
	}
	if s.withhold(j, level) {
		res.Withheld++
		if !j.Recurring() {
			s.release(j)
			return false, nil
		}
		return false, s.spend(ctx, j, now, nil)
	}
	if s.opts.Now().After(j.LeaseUntil.Add(-s.opts.ClaimLease / 2)) {
		if !s.renew(ctx, j, res) {
			return false, nil
		}
	}

	late := now.Sub(j.NextAt)
	if !j.Recurring() && late > s.opts.MissedGrace {
		res.Dropped++
		log.Warn("one-shot job dropped: it is past missed_grace", "due", j.NextAt, "late", s.formatDuration(late.Truncate(time.Second)))
		s.report(Fired{JobID: j.ID, SessionID: j.SessionID, OccurrenceAt: j.NextAt, Status: "dropped", LateBy: late})
		_, err := s.opts.Store.Retire(context.WithoutCancel(ctx), j.ID, s.opts.Owner)
		s.forget(j.ID)
		return false, err
	}

	gate, p, v, err := s.evaluate(ctx, j)
	if ctx.Err() != nil {
		// The host is stopping: give the occurrence back untouched.
		s.release(j)
		return false, nil
	}
	if err != nil {
		res.Declined++
		log.Warn("gate could not be evaluated; occurrence declined", "err", err)
		if s.noteGateFailure(j.ID, err) {
			log.Warn("job NOT FIRING: its gate keeps failing", "reason", s.failureReason(j.ID))
		}
		if !j.Recurring() {
			// A one-shot has no next occurrence to move to: it keeps its
			// claim and is retried once the lease runs out.
			return false, nil
		}
		// Declined means spent; the baseline stays as last observed.
		return false, s.spend(ctx, j, now, nil)
	}
	if gate != nil {
		if s.noteGateOK(j.ID) {
			log.Info("job's gate works again")
		}
		if p.exit != 0 && gate.When.Kind != WhenSucceeded {
			// Only succeeded reads the exit status; for the rest a
			// non-zero exit is often the quiet state (grep, diff -q).
			log.Debug("gate command exited non-zero", "exit", p.exit, "fire", v.fire)
		}
		if !v.fire {
			res.Declined++
			if !j.Recurring() {
				_, err := s.opts.Store.Retire(context.WithoutCancel(ctx), j.ID, s.opts.Owner)
				s.forget(j.ID)
				return false, err
			}
			return false, s.spend(ctx, j, now, v.baseline)
		}
	}

	next, missed, capped, err := s.following(j, now)
	if err != nil {
		log.Warn("job has no next occurrence; removed", "err", err)
		_, rerr := s.opts.Store.Retire(context.WithoutCancel(ctx), j.ID, s.opts.Owner)
		s.forget(j.ID)
		return false, errors.Join(err, rerr)
	}
	// A gate may have taken a while: make sure the job is still ours (a
	// cancel meanwhile wins) and give the turn a whole lease.
	if gate != nil && !s.renew(ctx, j, res) {
		return false, nil
	}
	msg := s.message(j, now, missed, capped, gate, p)
	delivered, err := s.fire(ctx, j, msg)
	if !delivered {
		if errors.Is(err, ErrDeclined) || ctx.Err() != nil {
			res.Returned++
			s.release(j)
			return false, nil
		}
		// Neither delivered nor handed back: the lease is left to run
		// out, and counts against the job.
		log.Error("fire job: the turn was not delivered", "err", err)
		return false, nil
	}
	res.Fired++
	fired := Fired{JobID: j.ID, SessionID: j.SessionID, OccurrenceAt: j.NextAt, Status: "completed", Missed: missed, LateBy: max(late, 0)}
	if err != nil {
		log.Warn("scheduled turn failed", "err", err)
		fired.Status, fired.Err = "failed", err
	}
	s.report(fired)
	store := context.WithoutCancel(ctx)
	if !j.Recurring() {
		_, err := s.opts.Store.Retire(store, j.ID, s.opts.Owner)
		s.forget(j.ID)
		return true, err
	}
	_, err = s.opts.Store.Advance(store, j.ID, s.opts.Owner, Advance{NextAt: next, FiredAt: now, Baseline: v.baseline})
	return true, err
}

// Fired is what became of a due occurrence this host handled: a turn
// delivered (completed or failed) or a one-shot dropped past its grace.
type Fired struct {
	JobID, SessionID string
	OccurrenceAt     time.Time
	Status           string // completed, failed or dropped
	Missed           int    // occurrences collapsed into this turn
	LateBy           time.Duration
	Err              error // why a turn failed
}

// OnFired sets a function told of every occurrence handled, such as meka
// serve's feed and its schedule.fired webhooks; nil stops it.
func (s *Scheduler) OnFired(fn func(Fired)) {
	if fn == nil {
		s.fired.Store(nil)
		return
	}
	s.fired.Store(&fn)
}

func (s *Scheduler) report(f Fired) {
	if fn := s.fired.Load(); fn != nil {
		(*fn)(f)
	}
}

// withheldNow is Withheld with this host's tools and confinement.
func (s *Scheduler) withheldNow(j Job, level permission.Level) string {
	return Withheld(j, level, func(name string) (permission.Level, bool) {
		_, needs, ok := s.opts.Firer.Tool(j.SessionID, name)
		return needs, ok
	}, s.opts.Confined()).Reason
}

// evaluate runs j's gate, if any. A nil gate means ungated: fire.
func (s *Scheduler) evaluate(ctx context.Context, j Job) (*Gate, probe, verdict, error) {
	g, err := j.ParsedGate()
	if err != nil {
		return nil, probe{}, verdict{}, &GateError{JobID: j.ID, Err: err}
	}
	if g == nil {
		return nil, probe{}, verdict{fire: true}, nil
	}
	p, err := s.runCheck(ctx, j, g)
	if err != nil {
		return g, probe{}, verdict{}, err
	}
	v, err := judge(g.When, p, j.Baseline, j.HasBaseline)
	if err != nil {
		return g, p, verdict{}, &GateError{JobID: j.ID, Err: err}
	}
	return g, p, v, nil
}

// spend moves a recurring job this host has claimed past a declined
// occurrence.
func (s *Scheduler) spend(ctx context.Context, j Job, now time.Time, baseline *string) error {
	next, _, _, err := s.following(j, now)
	if err != nil {
		_, rerr := s.opts.Store.Retire(context.WithoutCancel(ctx), j.ID, s.opts.Owner)
		s.forget(j.ID)
		return errors.Join(err, rerr)
	}
	_, err = s.opts.Store.Advance(context.WithoutCancel(ctx), j.ID, s.opts.Owner, Advance{NextAt: next, Baseline: baseline})
	return err
}

// renew extends this host's lease on j to a whole ClaimLease from now,
// and reports whether the job is still ours: canceled or taken over, it
// is not, and is left alone.
func (s *Scheduler) renew(ctx context.Context, j Job, res *SweepResult) bool {
	ok, err := s.opts.Store.Renew(ctx, j.ID, s.opts.Owner, s.opts.Now().Add(s.opts.ClaimLease))
	if err != nil {
		s.log.Warn("renew job lease", "job", ShortID(j.ID), "err", err)
		return false
	}
	if !ok {
		res.Lost++
		s.forget(j.ID)
		s.log.Info("job canceled or taken over before its turn; not fired", "job", ShortID(j.ID))
	}
	return ok
}

// release hands an occurrence back.
func (s *Scheduler) release(j Job) {
	if _, err := s.opts.Store.Release(context.Background(), j.ID, s.opts.Owner); err != nil {
		s.log.Warn("hand back job", "job", ShortID(j.ID), "err", err)
	}
}

// following returns a recurring job's next occurrence after the one due,
// with how many occurrences the due one stands in for. A job that missed
// several is rescheduled from now, so an outage never becomes a burst.
func (s *Scheduler) following(j Job, now time.Time) (next time.Time, missed int, capped bool, err error) {
	if !j.Recurring() {
		return time.Time{}, 1, false, nil
	}
	missed, capped = occurrences(j, now)
	if j.Kind == KindEvery && missed <= 1 {
		// On time: keep the cadence.
		if next = j.NextAt.Add(j.Interval); next.After(now) {
			return next, missed, false, nil
		}
	}
	next, err = nextAfter(j, now)
	return next, missed, capped, err
}

// fire hands the turn to the host. A panic is an undelivered turn.
func (s *Scheduler) fire(ctx context.Context, j Job, msg session.UserMessage) (delivered bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			delivered, err = false, fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	stop := s.keepLease(ctx, j)
	defer stop()
	return s.opts.Firer.Fire(ctx, j.SessionID, Firing{JobID: j.ID, Message: msg, Withdraw: j.Recurring(), Isolation: j.Isolation})
}

// keepLease renews the lease on j every third of ClaimLease while its
// turn runs, so a long turn is not taken for a dead host's; a host that
// dies stops renewing and another takes the occurrence over once the
// lease runs out. stop ends the renewals and waits for them.
func (s *Scheduler) keepLease(ctx context.Context, j Job) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.opts.ClaimLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ok, err := s.opts.Store.Renew(ctx, j.ID, s.opts.Owner, s.opts.Now().Add(s.opts.ClaimLease))
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				s.log.Warn("renew job lease during its turn", "job", ShortID(j.ID), "err", err)
			case !ok:
				// Canceled meanwhile, or taken over: the turn goes on, and
				// its advance will find the job no longer ours.
				s.log.Warn("job lease lost during its turn", "job", ShortID(j.ID))
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// message builds the turn's input: the prompt as written, then what the
// scheduler knows about this occurrence.
func (s *Scheduler) message(j Job, now time.Time, missed int, capped bool, g *Gate, p probe) session.UserMessage {
	loc := j.Location()
	var b strings.Builder
	fmt.Fprintf(&b, "[Scheduled job %s, %s, fired at %s.", ShortID(j.ID), j.Describe(), FormatTime(now.Truncate(time.Second), loc))
	switch {
	case !j.Recurring():
		if late := now.Sub(j.NextAt); late >= lateAfter {
			fmt.Fprintf(&b, " It is %s late: it was due at %s; judge whether it still matters.", s.formatDuration(late.Truncate(time.Minute)), FormatTime(j.NextAt, loc))
		}
	case missed > 1:
		more := ""
		if capped {
			more = "more than "
		}
		fmt.Fprintf(&b, " This one turn stands in for %s%d occurrences missed since %s, while no host ran the job; it is rescheduled from now.", more, missed, FormatTime(j.NextAt, loc))
	}
	b.WriteString("]")
	if g != nil {
		fmt.Fprintf(&b, "\n\nIts gate fired (%s). ", g.Describe())
		out := p.out
		if len(out) == 0 && len(p.stderr) == 0 {
			b.WriteString("The check printed nothing.")
		} else {
			b.WriteString("What the check returned, so you need not run it again:\n\n")
			b.WriteString(cut(out, MaxTurnOutput, p.cut))
			if len(p.stderr) > 0 && len(out) < MaxTurnOutput {
				b.WriteString("\n\nstderr:\n")
				b.WriteString(cut(p.stderr, MaxTurnOutput-len(out), false))
			}
		}
	}
	return session.UserMessage{
		Parts:  model.Parts{model.Text{Text: j.Prompt}, model.Text{Text: b.String()}},
		Source: session.SourceSchedule,
	}
}

// cut returns at most n bytes of b as text, on a UTF-8 boundary, saying
// when something was left out.
func cut(b []byte, n int, more bool) string {
	if len(b) <= n && !more {
		return string(b)
	}
	end := min(n, len(b))
	for end > 0 && end < len(b) && !utf8.RuneStart(b[end]) {
		end--
	}
	return string(b[:end]) + "\n[… cut: the turn sees the first " + fmt.Sprint(end) + " bytes]"
}
