package writetodos

import (
	"strings"

	"meka.dev/meka/plan"
)

// StopIncomplete ends a turn whose list still had open items when the
// completion reminders ran out (plan.StopIncomplete).
const StopIncomplete = plan.StopIncomplete

// nudgeText gives the ways out that end the turn normally; the completion
// check adds what leaving an item open leads to.
const nudgeText = `For each item you have done, check that it really is done, then mark it completed with write_todos; do not mark an item completed without evidence. If an item is no longer to be done, or cannot be done in this turn, mark it cancelled with write_todos and say why in your reply. Once every item is completed or cancelled, the turn ends normally.`

// completionCheck reopens a normal end of a turn while items are pending
// or in progress; completed and cancelled items are resolved.
func completionCheck(p *Plugin) *plan.CompletionCheck {
	return &plan.CompletionCheck{
		Open: func() (int, string) {
			st := p.state()
			if n := len(st.open()); n > 0 {
				return n, renderOpen(st)
			}
			return 0, ""
		},
		Max: p.opts.MaxCompletionNudges, Title: "Todo list", List: "todo list", One: "item", Many: "items", Reminder: nudgeText,
	}
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
