package plan

import (
	"context"
	"fmt"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/session"
)

// StopIncomplete ends a turn whose plan still had open items when the
// completion reminders ran out. It is not a successful end: a one-shot run
// exits non-zero on it.
const StopIncomplete agent.StopReason = "todo_incomplete"

// The caps meka puts on reminders by default, whatever the dialect: a
// model that answers three in a row without a tool call will not act on
// the fourth, and one that reads the list before every reply and changes
// nothing is not sent back to it for ever.
const (
	NudgesInARow  = 3
	NudgesPerTurn = 9
)

// CompletionCheck is the completion rule of a dialect whose list has no
// rule of its own (update_plan, write_todos): a normal end of a turn while
// items are open is reopened with a reminder that asks for verification or
// an explanation, never for completion as such. With Max > 0 the turn ends
// with StopIncomplete after min(Max, NudgesInARow) reminders in a row
// answered without a tool call, or after Max reminders in one run of the
// engine, whichever comes first. It is safe for concurrent use.
type CompletionCheck struct {
	// Open returns how many items are open and how they render.
	Open func() (n int, rendered string)
	// Max bounds the reminders of one run; zero or less is no ceiling at
	// all, in a row or in the run.
	Max int
	// Title names the list in notices ("Plan"), List in the reminder
	// ("plan"); One and Many are its items ("step", "steps").
	Title, List, One, Many string
	// Reminder follows the rendered items in the message: the ways out
	// that end the turn normally.
	Reminder string

	mu sync.Mutex // guards the fields below
	// run is the Engine.Run reminders count for; another starts over, even
	// when it reuses a withdrawn turn's number.
	run uint64
	// nudges counts the run's reminders, inARow those since the model
	// last called a tool; calls is StopInfo.ToolCalls at the last one.
	nudges, inARow, calls int
}

var _ agent.StopInterceptor = (*CompletionCheck)(nil)

// BeforeStop implements agent.StopInterceptor.
func (c *CompletionCheck) BeforeStop(_ context.Context, info agent.StopInfo) agent.StopDecision {
	n, rendered := c.Open()
	if n == 0 {
		return agent.StopDecision{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if info.Run != c.run {
		c.run, c.nudges, c.inARow, c.calls = info.Run, 0, 0, 0
	}
	if c.nudges > 0 && info.ToolCalls > c.calls {
		// The model did something since the last reminder.
		c.inARow = 0
	}
	left := fmt.Sprintf("%d open %s", n, Plural(n, c.One, c.Many))
	inARow := min(c.Max, NudgesInARow)
	var why string
	switch {
	case c.Max <= 0:
	case c.nudges >= c.Max:
		why = fmt.Sprintf("after %d completion %s this turn", c.nudges, Plural(c.nudges, "reminder", "reminders"))
	case c.inARow >= inARow:
		why = fmt.Sprintf("after %d completion %s in a row without a tool call", c.inARow, Plural(c.inARow, "reminder", "reminders"))
	}
	if why != "" {
		return agent.StopDecision{Stop: StopIncomplete, Notice: &session.Notice{
			Severity:    session.SeverityWarning,
			Title:       fmt.Sprintf("%s: turn ended incomplete with %s %s", c.Title, left, why),
			Description: rendered,
		}}
	}
	c.nudges++
	c.inARow++
	c.calls = info.ToolCalls
	of := ""
	if c.Max > 0 {
		of = fmt.Sprintf(" of %d", inARow)
	}
	return agent.StopDecision{
		Continue: true,
		Message: fmt.Sprintf("You are ending your turn, but your %s still has %s:\n%s\n%s\n%s",
			c.List, left, rendered, c.Reminder, c.consequence(inARow)),
		Notice: &session.Notice{Severity: session.SeverityInfo,
			Title: fmt.Sprintf("%s: %s, continuing (reminder %d%s)", c.Title, left, c.inARow, of)},
	}
}

// consequence tells the model what becomes of a turn it ends with items
// still open, so that leaving one open is an informed choice rather than
// a loop. Callers hold mu, after counting the reminder being sent.
func (c *CompletionCheck) consequence(inARow int) string {
	if c.Max <= 0 {
		return fmt.Sprintf("A turn does not end while any %s are pending or in progress: you will be reminded each time.", c.Many)
	}
	more := min(inARow-c.inARow, c.Max-c.nudges)
	if more == 0 {
		return fmt.Sprintf("This is the last reminder: if you end your turn again with any %s pending or in progress, the turn ends as incomplete (todo_incomplete), reported as unfinished rather than done.", c.Many)
	}
	return fmt.Sprintf("If you end your turn with any %s still pending or in progress you are reminded again, at most %d more %s in a row before the turn ends as incomplete (todo_incomplete), reported as unfinished rather than done.",
		c.Many, more, Plural(more, "time", "times"))
}
