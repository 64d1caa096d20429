package todo

import (
	"meka.dev/meka/plan"
)

// StopIncomplete ends a turn whose plan still had open steps when the
// completion reminders ran out (plan.StopIncomplete).
const StopIncomplete = plan.StopIncomplete

// nudgeText gives the ways out that end the turn normally; the completion
// check adds what leaving a step open leads to.
const nudgeText = `Before you finish: for each step you have done, check that it really is done, then mark it "completed" with update_plan. If a step cannot be done now, mark it "blocked", or "abandoned" if it is no longer to be done, and say why in your reply. Do not mark a step completed that you have not done and verified. Once every step is completed, blocked or abandoned, the turn ends normally.`

// completionCheck reopens a normal end of a turn while the plan has
// pending or in-progress steps; completed, blocked and abandoned steps are
// resolved.
func completionCheck(store *Store, max int) *plan.CompletionCheck {
	return &plan.CompletionCheck{
		Open: func() (int, string) {
			open := store.state().open()
			if len(open) == 0 {
				return 0, ""
			}
			return len(open), renderPlan(state{Items: open}, ReminderCap)
		},
		Max: max, Title: "Plan", List: "plan", One: "step", Many: "steps", Reminder: nudgeText,
	}
}
