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

// CompletionCheck is the completion rule of a dialect whose list has no
// rule of its own (update_plan, write_todos): a normal end of a turn while
// items are open is reopened with a reminder that asks for verification or
// an explanation, never for completion as such; after Max reminders in one
// run of the engine the turn ends with StopIncomplete. It is safe for
// concurrent use.
type CompletionCheck struct {
	// Open returns how many items are open and how they render.
	Open func() (n int, rendered string)
	// Max bounds the reminders of one run; zero or less is no ceiling.
	Max int
	// Title names the list in notices ("Plan"), List in the reminder
	// ("plan"); One and Many are its items ("step", "steps").
	Title, List, One, Many string
	// Reminder follows the rendered items in the message.
	Reminder string

	mu sync.Mutex // guards run and nudges
	// run is the Engine.Run reminders count for; another starts over, even
	// when it reuses a withdrawn turn's number.
	run    uint64
	nudges int
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
		c.run, c.nudges = info.Run, 0
	}
	left := fmt.Sprintf("%d open %s", n, Plural(n, c.One, c.Many))
	if c.Max > 0 && c.nudges >= c.Max {
		return agent.StopDecision{Stop: StopIncomplete, Notice: &session.Notice{
			Severity:    session.SeverityWarning,
			Title:       fmt.Sprintf("%s: turn ended with %s after %d completion %s", c.Title, left, c.nudges, Plural(c.nudges, "reminder", "reminders")),
			Description: rendered,
		}}
	}
	c.nudges++
	of := ""
	if c.Max > 0 {
		of = fmt.Sprintf(" of %d", c.Max)
	}
	return agent.StopDecision{
		Continue: true,
		Message:  fmt.Sprintf("You are ending your turn, but your %s still has %s:\n%s\n%s", c.List, left, rendered, c.Reminder),
		Notice: &session.Notice{Severity: session.SeverityInfo,
			Title: fmt.Sprintf("%s: %s, continuing (reminder %d%s)", c.Title, left, c.nudges, of)},
	}
}
