package schedule

import (
	"errors"
	"fmt"

	"meka.dev/meka/permission"
)

// ShellToolName is the built-in shell tool: as a gate it is admitted only
// where commands can be confined.
const ShellToolName = "shell_execute"

// ToolLevel resolves a gate's tool to the level a call of it needs now;
// ok is false when the tool cannot be resolved here.
type ToolLevel func(name string) (needs permission.Level, ok bool)

// Verdict is whether a job can fire, as far as a process can establish.
type Verdict struct {
	// Reason is why the job cannot fire (the sentence after "NOT FIRING:");
	// empty when it can or when Known is false.
	Reason string
	// Known is false when the answer needs something this process cannot
	// resolve, such as a tool gate outside a host.
	Known bool
}

// Withheld decides whether j can fire with its session at level now:
// parked jobs, sessions at none, and gates the job's recorded level or
// the session's level no longer authorises are withheld. tools resolves a
// tool gate (nil: unknown); confined says whether shell_execute can be
// confined here. Gate failures, which only the running host knows, are
// not considered.
func Withheld(j Job, level permission.Level, tools ToolLevel, confined bool) Verdict {
	if j.Held != "" {
		return Verdict{Reason: "parked: " + j.Held, Known: true}
	}
	if level == permission.None {
		return Verdict{Reason: "the session's permission level is none, so none of its jobs fires; raise the level to restore it", Known: true}
	}
	g, err := j.ParsedGate()
	if err != nil {
		return Verdict{Reason: err.Error(), Known: true}
	}
	if g == nil {
		return Verdict{Known: true}
	}
	recorded, err := permission.ParseLevel(j.Level)
	if err != nil {
		recorded = permission.None
	}
	createdAt := "at the " + recorded.String() + " level"
	if j.Level == "" {
		createdAt = "before levels were recorded"
	}
	if g.Check.IsCommand() {
		switch {
		case recorded < permission.Unrestricted:
			return Verdict{Reason: fmt.Sprintf("its command gate needs the unrestricted level and the job was created %s", createdAt), Known: true}
		case level < permission.Unrestricted:
			return Verdict{Reason: fmt.Sprintf("its command gate needs the unrestricted level and the session has %s; raise the level to restore it", level), Known: true}
		}
		return Verdict{Known: true}
	}
	if recorded < permission.Read {
		return Verdict{Reason: fmt.Sprintf("its tool gate needs the read level and the job was created %s", createdAt), Known: true}
	}
	if g.Check.Tool == ShellToolName && !confined {
		return Verdict{Reason: "its gate calls shell_execute, which cannot be confined on this machine, so it is no gate", Known: true}
	}
	if tools == nil {
		return Verdict{}
	}
	needs, ok := tools(g.Check.Tool)
	if !ok {
		// An unavailable tool is a gate failure when the job comes due,
		// not a withholding.
		return Verdict{Known: true}
	}
	if needs > permission.Read {
		return Verdict{Reason: fmt.Sprintf("its gate calls %s, which now needs the %s level; a gate may only call a tool that resolves to read", g.Check.Tool, needs), Known: true}
	}
	return Verdict{Known: true}
}

// gateFailure counts a job's consecutive gate failures.
type gateFailure struct {
	n   int
	err string
}

// failuresReported is how many consecutive failures mark a job NOT FIRING:
// one is as often a blip as a break.
const failuresReported = 2

// noteGateFailure counts a failure and reports whether it is the one that
// makes the job NOT FIRING.
func (s *Scheduler) noteGateFailure(id string, err error) (reported bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.failures[id]
	f.n++
	f.err = err.Error()
	var ge *GateError
	if errors.As(err, &ge) {
		f.err = ge.Err.Error()
	}
	s.failures[id] = f
	return f.n == failuresReported
}

// noteGateOK ends a run of failures and reports whether one was reported.
func (s *Scheduler) noteGateOK(id string) (wasReported bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.failures[id]
	delete(s.failures, id)
	return ok && f.n >= failuresReported
}

// failureReason is the NOT FIRING sentence of a job whose gate keeps
// failing, "" otherwise. It names the cause and not the count, so the
// [Scheduled] index stays the same from request to request while the
// cause does.
func (s *Scheduler) failureReason(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.failures[id]; f.n >= failuresReported {
		return "its gate keeps failing: " + f.err
	}
	return ""
}

// noteWithheld records the reason a job is withheld now ("" when it is
// not) and reports whether that changed since the last sweep, so that
// warnings go out on the change rather than every tick.
func (s *Scheduler) noteWithheld(id, reason string) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.withheld[id]
	if reason == "" {
		delete(s.withheld, id)
	} else {
		s.withheld[id] = reason
	}
	return prev != reason
}

// forget drops what the scheduler remembers of a job that is gone.
func (s *Scheduler) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failures, id)
	delete(s.withheld, id)
}

// NotFiring returns why j cannot fire now, "" when it can, as this
// process knows it: Withheld at the session's current level, then the
// gate failures the running scheduler has seen.
func (s *Scheduler) NotFiring(j Job, level permission.Level) string {
	var tools ToolLevel
	if s.opts.Firer != nil {
		tools = func(name string) (permission.Level, bool) {
			_, needs, ok := s.opts.Firer.Tool(j.SessionID, name)
			return needs, ok
		}
	}
	if v := Withheld(j, level, tools, s.opts.Confined()); v.Reason != "" {
		return v.Reason
	}
	return s.failureReason(j.ID)
}
