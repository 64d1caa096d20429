// Package plan is the item model every plan dialect shares (the
// checklist, update_plan/patch_plan, write_todos): items and their
// states, the Changed event front doors render whatever the dialect, the
// mapping to a three-state plan panel, and the completion check that holds
// a turn open while items are.
//
// Dialects live in plan/checklist, plan/todo and plan/writetodos; each
// derives its list by folding its accepted tool calls from the session
// log. This package imports agent, session, tool and model.
package plan

import (
	"meka.dev/meka/agent"
)

// Status is an item's state. Dialects use the subset their tools accept.
type Status string

const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	// Deferred items wait on a person, an event or an explicit later
	// (checklist).
	Deferred Status = "deferred"
	// Canceled is the checklist's spelling, Cancelled write_todos'.
	Canceled  Status = "canceled"
	Cancelled Status = "cancelled"
	// Blocked and Abandoned are update_plan's.
	Blocked   Status = "blocked"
	Abandoned Status = "abandoned"
)

// Open reports whether an item in state s holds a turn open.
func (s Status) Open() bool { return s == Pending || s == InProgress }

// Item is one entry of a plan.
type Item struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status Status `json:"status"`
	// Reason is why an item was deferred or canceled.
	Reason string `json:"reason,omitempty"`
	// Task is the background task a deferred item waits on.
	Task string `json:"task,omitempty"`
	// Phase groups update_plan steps.
	Phase string `json:"phase,omitempty"`
	// ActiveForm is write_todos' present-continuous label ("Writing tests").
	ActiveForm string `json:"active_form,omitempty"`
}

// Changed is emitted after every change of a session's plan, whatever the
// dialect. Items are the items on the list, in order.
type Changed struct {
	agent.PluginEvent
	// Dialect is "checklist", "update_plan" or "write_todos".
	Dialect string
	Items   []Item
	// Completed and Total count the plan's items, including those a
	// dialect takes off the list or folds away.
	Completed, Total int
	// Retired counts completed steps folded out of the list (update_plan).
	Retired int
	// Stale is set when a new user turn has started since the agent last
	// updated the list (write_todos): the list may describe a request the
	// user has moved past, so front doors hide or dim it until the next
	// update clears the flag. Item states are unchanged.
	Stale bool
}

// Snapshotter is a plan fold that can say what its plan is now, for a
// front door that attaches after the changes were announced.
type Snapshotter interface {
	// Snapshot returns the plan as it stands; ok is false when the
	// feature is off.
	Snapshot() (c Changed, ok bool)
}

// Active returns the item in progress, if any.
func (c Changed) Active() (Item, bool) {
	for _, it := range c.Items {
		if it.Status == InProgress {
			return it, true
		}
	}
	return Item{}, false
}

// OpenItems returns the items that hold a turn open.
func OpenItems(items []Item) []Item {
	var out []Item
	for _, it := range items {
		if it.Status.Open() {
			out = append(out, it)
		}
	}
	return out
}

// PanelStatus is a state of a three-state plan panel (ACP's).
type PanelStatus string

const (
	PanelPending    PanelStatus = "pending"
	PanelInProgress PanelStatus = "in_progress"
	PanelCompleted  PanelStatus = "completed"
)

// PanelEntry is an item as a three-state plan panel shows it.
type PanelEntry struct {
	Content string
	Status  PanelStatus
}

// Panel maps items to a panel that knows only pending, in progress and
// completed, keeping every record visible: a deferred item is pending with
// what it waits on in its text, a blocked one pending prefixed
// "Blocked: ", an abandoned or cancelled one completed prefixed
// "Abandoned: " or "Cancelled: ".
func Panel(items []Item) []PanelEntry {
	out := make([]PanelEntry, 0, len(items))
	for _, it := range items {
		e := PanelEntry{Content: it.Text, Status: PanelPending}
		switch it.Status {
		case InProgress:
			e.Status = PanelInProgress
		case Completed:
			e.Status = PanelCompleted
		case Deferred:
			wait := it.Reason
			if it.Task != "" {
				wait += " (waits on background task " + it.Task + ")"
			}
			e.Content = it.Text + " — deferred: " + wait
		case Blocked:
			e.Content = "Blocked: " + it.Text
		case Abandoned:
			e.Status, e.Content = PanelCompleted, "Abandoned: "+it.Text
		case Canceled, Cancelled:
			e.Status, e.Content = PanelCompleted, "Cancelled: "+it.Text
		}
		out = append(out, e)
	}
	return out
}

// Glyph is the terminal's mark for an item: › in progress, □ pending,
// » deferred, ✓ completed, × canceled or abandoned, ! blocked.
func Glyph(s Status) string {
	switch s {
	case InProgress:
		return "›"
	case Deferred:
		return "»"
	case Completed:
		return "✓"
	case Canceled, Cancelled, Abandoned:
		return "×"
	case Blocked:
		return "!"
	}
	return "□"
}

// Lines renders items one per row for a terminal.
func Lines(items []Item) string {
	var s string
	for _, it := range items {
		s += Glyph(it.Status) + " " + it.Text
		if it.Status == Deferred && it.Reason != "" {
			s += " (" + it.Reason + ")"
		}
		s += "\n"
	}
	return s
}
