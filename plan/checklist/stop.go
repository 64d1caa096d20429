package checklist

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// The caps on nudging: a run of nudges answered without a tool call, and
// all the nudges of one turn. A turn that reaches one ends with
// plan.StopIncomplete.
const (
	NudgesInARow  = plan.NudgesInARow
	NudgesPerTurn = plan.NudgesPerTurn
)

const (
	noticePrefix  = "Checklist: "
	nudgeHeadline = "You are ending your turn, but your checklist still has %s:"
	nudgeWaysOut  = `The turn cannot end while an item is pending or in progress. For each one, either:
- keep working on it now;
- complete it (checklist_edit, status "completed") once it is done;
- cancel it (status "canceled") with a reason, if it is no longer to be done;
- defer it (status "deferred") with a reason saying what it waits on. `
)

// interceptor holds a turn open while an item is pending or in progress.
type interceptor struct {
	p *Plugin

	mu sync.Mutex // guards the counters of the turn being held
	// turn is the turn the counters are for; another turn starts over.
	turn int64
	// nudges counts the turn's nudges; run those since the model last
	// called a tool.
	nudges, run int
	// calls and rounds are StopInfo's when the last nudge was sent.
	calls, rounds int
}

var _ agent.StopInterceptor = (*interceptor)(nil)

// BeforeStop nudges the model back to its open items, or, once a cap is
// reached, lets the turn end with a warning saying how many were left.
func (ic *interceptor) BeforeStop(_ context.Context, info agent.StopInfo) agent.StopDecision {
	if !ic.p.Enabled() {
		return agent.StopDecision{}
	}
	open := ic.p.fold.state().open()
	if len(open) == 0 {
		return agent.StopDecision{}
	}
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if info.Turn != ic.turn || info.Rounds < ic.rounds {
		// Another turn (a turn number comes back after a rewind, with
		// fewer rounds than the turn it replaces had).
		ic.turn, ic.nudges, ic.run, ic.calls, ic.rounds = info.Turn, 0, 0, 0, 0
	}
	if ic.nudges > 0 && info.ToolCalls > ic.calls {
		// The model did something since the last nudge.
		ic.run = 0
	}
	left := counted(len(open), "open item", "open items")
	switch {
	case ic.nudges >= NudgesPerTurn:
		return agent.StopDecision{Stop: plan.StopIncomplete, Notice: &session.Notice{Severity: session.SeverityWarning,
			Title: fmt.Sprintf("%sturn ended with %s after %d nudges this turn", noticePrefix, left, ic.nudges)}}
	case ic.run >= NudgesInARow:
		return agent.StopDecision{Stop: plan.StopIncomplete, Notice: &session.Notice{Severity: session.SeverityWarning,
			Title: fmt.Sprintf("%sturn ended with %s after %d nudges in a row without a tool call", noticePrefix, left, ic.run)}}
	}
	ic.nudges++
	ic.run++
	ic.calls, ic.rounds = info.ToolCalls, info.Rounds
	return agent.StopDecision{
		Continue: true,
		Message:  nudge(open),
		Notice: &session.Notice{Severity: session.SeverityInfo,
			Title: fmt.Sprintf("%s%s, continuing, nudge %d of %d", noticePrefix, left, ic.run, NudgesInARow)},
	}
}

// nudge is the message that sends the model back to its open items.
func nudge(open []plan.Item) string {
	var b strings.Builder
	fmt.Fprintf(&b, nudgeHeadline, counted(len(open), "open item", "open items"))
	b.WriteByte('\n')
	b.WriteString(lines(open))
	b.WriteString("\n\n")
	b.WriteString(nudgeWaysOut)
	b.WriteString(deferralRule)
	return b.String()
}
