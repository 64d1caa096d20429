package todo

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// StopIncomplete ends a turn whose plan still had open steps when the
// completion nudges ran out. It is not a successful end: a one-shot run
// exits non-zero on it.
const StopIncomplete agent.StopReason = "todo_incomplete"

const nudgeText = `Before you finish: for each step you have done, check that it really is done, then mark it "completed" with update_plan. If a step cannot be done now, mark it "blocked", or "abandoned" if it is no longer to be done, and say why in your reply. Do not mark a step completed that you have not done and verified.`

// interceptor reopens a normal end of a turn while the plan has pending or
// in-progress steps; completed, blocked and abandoned steps are resolved.
type interceptor struct {
	store *Store
	// max is Plugin.MaxCompletionNudges; zero or less is no ceiling.
	max int

	mu sync.Mutex // guards the fields below
	// run is the Engine.Run nudges counts for; another starts over, even
	// when it reuses a withdrawn turn's number.
	run    uint64
	nudges int
}

var _ agent.StopInterceptor = (*interceptor)(nil)

func (ic *interceptor) BeforeStop(_ context.Context, info agent.StopInfo) agent.StopDecision {
	open := ic.store.state().open()
	if len(open) == 0 {
		return agent.StopDecision{}
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if info.Run != ic.run {
		ic.run, ic.nudges = info.Run, 0
	}
	left := fmt.Sprintf("%d open %s", len(open), plan.Plural(len(open), "step", "steps"))
	if ic.max > 0 && ic.nudges >= ic.max {
		return agent.StopDecision{Stop: StopIncomplete, Notice: &session.Notice{
			Severity:    session.SeverityWarning,
			Title:       fmt.Sprintf("Plan: turn ended with %s after %d completion %s", left, ic.nudges, plan.Plural(ic.nudges, "reminder", "reminders")),
			Description: renderPlan(state{Items: open}, ReminderCap),
		}}
	}
	ic.nudges++
	of := ""
	if ic.max > 0 {
		of = fmt.Sprintf(" of %d", ic.max)
	}
	return agent.StopDecision{
		Continue: true,
		Message:  nudge(open),
		Notice: &session.Notice{Severity: session.SeverityInfo,
			Title: fmt.Sprintf("Plan: %s, continuing (reminder %d%s)", left, ic.nudges, of)},
	}
}

// nudge asks for verification or an explanation of each open step, never
// for completion as such.
func nudge(open []plan.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are ending your turn, but your plan still has %d open %s:\n", len(open), plan.Plural(len(open), "step", "steps"))
	b.WriteString(renderPlan(state{Items: open}, ReminderCap))
	b.WriteString("\n")
	b.WriteString(nudgeText)
	return b.String()
}
