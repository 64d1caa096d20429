package writetodos

import (
	"context"
	"fmt"
	"meka.dev/meka/plan"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/session"
)

// StopIncomplete ends a turn whose list still had open items when the
// completion nudges ran out. It is not a successful end.
const StopIncomplete agent.StopReason = "todo_incomplete"

const nudgeText = `For each item you have done, check that it really is done, then mark it completed with write_todos. If an item cannot be done now, leave it pending and say why in your reply; if it is no longer to be done, mark it cancelled. Do not mark an item completed without evidence.`

// interceptor reopens a normal end of a turn while items are pending or
// in progress; completed and cancelled items are resolved.
type interceptor struct {
	p   *Plugin
	max int

	mu sync.Mutex // guards the fields below
	// run is the Engine.Run nudges counts for; another starts over, even
	// when it reuses a withdrawn turn's number.
	run    uint64
	nudges int
}

var _ agent.StopInterceptor = (*interceptor)(nil)

func (ic *interceptor) BeforeStop(_ context.Context, info agent.StopInfo) agent.StopDecision {
	st := ic.p.state()
	open := st.open()
	if len(open) == 0 {
		return agent.StopDecision{}
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if info.Run != ic.run {
		ic.run, ic.nudges = info.Run, 0
	}
	left := fmt.Sprintf("%d open %s", len(open), plan.Plural(len(open), "item", "items"))
	if ic.max > 0 && ic.nudges >= ic.max {
		return agent.StopDecision{Stop: StopIncomplete, Notice: &session.Notice{
			Severity:    session.SeverityWarning,
			Title:       fmt.Sprintf("Todo list: turn ended with %s after %d completion %s", left, ic.nudges, plan.Plural(ic.nudges, "reminder", "reminders")),
			Description: renderOpen(st),
		}}
	}
	ic.nudges++
	of := ""
	if ic.max > 0 {
		of = fmt.Sprintf(" of %d", ic.max)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are ending your turn, but your todo list still has %s:\n%s\n%s", left, renderOpen(st), nudgeText)
	return agent.StopDecision{Continue: true, Message: b.String(),
		Notice: &session.Notice{Severity: session.SeverityInfo,
			Title: fmt.Sprintf("Todo list: %s, continuing (reminder %d%s)", left, ic.nudges, of)}}
}

// renderOpen renders the open items with their numbers on the list.
func renderOpen(st state) string {
	var b strings.Builder
	for i, t := range st.Items {
		if t.Status.Open() && b.Len() < errorCap {
			writeLine(&b, i, t, true)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
