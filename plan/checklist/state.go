package checklist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"meka.dev/meka/plan"
)

// state is the checklist as the log adds it up. It is a value: every
// transition returns a new state and leaves its input as it was, so a
// tool can compute a change without making it.
type state struct {
	// owned is set on a state a transition returned: nothing else shares
	// its Items, so the next transition may reuse them instead of copying
	// the list (folding a long log copies it once, not once per call).
	owned bool

	// Items are the items on the list, in the order they were added.
	Items []plan.Item `json:"items"`
	// Added counts the items ever added; the next one gets c<Added+1>.
	Added int `json:"added"`
	// Completed and Canceled count the items taken off the list.
	Completed int `json:"completed"`
	Canceled  int `json:"canceled"`
}

// clone returns a copy of s that shares nothing with it.
func (s state) clone() state {
	s.Items = slices.Clone(s.Items)
	s.owned = false
	return s
}

// shared returns s for a reader that must not see it change.
func (s state) shared() state {
	s.owned = false
	return s
}

// writable returns s to be changed: a copy unless s is owned.
func (s state) writable() state {
	if !s.owned {
		s = s.clone()
		s.owned = true
	}
	return s
}

func (s state) index(id string) int {
	return slices.IndexFunc(s.Items, func(it plan.Item) bool { return it.ID == id })
}

// open returns the items that hold a turn: pending and in progress.
func (s state) open() []plan.Item { return plan.OpenItems(s.Items) }

func (s state) ids() []string {
	out := make([]string, len(s.Items))
	for i, it := range s.Items {
		out[i] = it.ID
	}
	return out
}

// addArgs are checklist_add's arguments.
type addArgs struct {
	Items []addItem `json:"items"`
}

// addItem is a text, or an object with a text and a starting status.
type addItem struct {
	Text   string      `json:"text"`
	Status plan.Status `json:"status,omitempty"`
}

func (a *addItem) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = addItem{Text: s}
		return nil
	}
	type plain addItem
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return errors.New("an item is a text or an object with a text")
	}
	*a = addItem(p)
	return nil
}

// editArgs are checklist_edit's arguments. An empty string is a field not
// given.
type editArgs struct {
	ID     string      `json:"id"`
	Status plan.Status `json:"status,omitempty"`
	Reason string      `json:"reason,omitempty"`
	Task   string      `json:"task,omitempty"`
	Text   string      `json:"text,omitempty"`
}

func parseAdd(raw json.RawMessage) (addArgs, error) {
	var a addArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return addArgs{}, fmt.Errorf("read the arguments: %w", err)
	}
	return a, nil
}

func parseEdit(raw json.RawMessage) (editArgs, error) {
	var a editArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return editArgs{}, fmt.Errorf("read the arguments: %w", err)
	}
	a.ID = strings.TrimSpace(a.ID)
	a.Reason = strings.TrimSpace(a.Reason)
	a.Task = strings.TrimSpace(a.Task)
	a.Text = strings.TrimSpace(a.Text)
	return a, nil
}

// add appends a's items and returns the ids they get.
func (s state) add(a addArgs) (state, []string, error) {
	if len(a.Items) == 0 {
		return s, nil, errors.New("give at least one item to add")
	}
	items := make([]plan.Item, len(a.Items))
	for i, it := range a.Items {
		text := strings.TrimSpace(it.Text)
		if text == "" {
			return s, nil, fmt.Errorf("item %d has no text", i+1)
		}
		st := it.Status
		switch st {
		case "":
			st = plan.Pending
		case plan.Pending, plan.InProgress:
		default:
			return s, nil, fmt.Errorf("item %d: a new item is pending or in_progress, not %q", i+1, st)
		}
		items[i] = plan.Item{ID: "c" + strconv.Itoa(s.Added+i+1), Text: text, Status: st}
	}
	next := s.writable()
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	next.Items = append(next.Items, items...)
	next.Added += len(items)
	return next, ids, nil
}

// edited describes what an edit did, for the checks only a tool can make
// and for its reply.
type edited struct {
	Item plan.Item
	// Removed is set when the item left the list (completed, canceled).
	Removed bool
	// KeptTask is a task a re-deferral kept from the earlier deferral
	// without naming it again.
	KeptTask string
}

// edit changes one item. Anything wrong refuses the whole edit.
func (s state) edit(a editArgs) (state, edited, error) {
	i := s.index(a.ID)
	if i < 0 {
		if len(s.Items) == 0 {
			return s, edited{}, fmt.Errorf("there is no item %q: the checklist is empty", a.ID)
		}
		return s, edited{}, fmt.Errorf("there is no item %q on the checklist; the ids on it are %s", a.ID, strings.Join(s.ids(), ", "))
	}
	if a.Status == "" && a.Reason == "" && a.Task == "" && a.Text == "" {
		return s, edited{}, fmt.Errorf("give %s a status, a reason, a task or a text to change", a.ID)
	}
	it := s.Items[i]
	was := it.Status
	if a.Text != "" {
		it.Text = a.Text
	}
	status := a.Status
	if status == "" {
		status = was
	}
	if a.Task != "" && status != plan.Deferred {
		return s, edited{}, fmt.Errorf("a task is what a deferred item waits on; it cannot go with status %s", status)
	}
	var e edited
	switch status {
	case plan.Pending, plan.InProgress:
		it.Reason, it.Task = "", ""
	case plan.Completed:
		it.Reason, it.Task = a.Reason, ""
	case plan.Canceled:
		if a.Reason == "" {
			return s, edited{}, fmt.Errorf("canceling %s needs a reason: say why it is no longer to be done", a.ID)
		}
		it.Reason, it.Task = a.Reason, ""
	case plan.Deferred:
		switch {
		case was != plan.Deferred:
			if a.Reason == "" {
				return s, edited{}, fmt.Errorf("deferring %s needs a reason: say what it waits on (a person, an event or an explicit later)", a.ID)
			}
			it.Reason, it.Task = a.Reason, a.Task
		case a.Reason != "":
			// A new reason restates what the item waits on: a task not
			// named again goes with the old reason.
			it.Reason, it.Task = a.Reason, a.Task
		case a.Task != "":
			it.Task = a.Task
		case a.Status == plan.Deferred:
			// A re-deferral that gives neither keeps both.
			e.KeptTask = it.Task
		}
	default:
		return s, edited{}, fmt.Errorf("unknown status %q", status)
	}
	it.Status = status
	next := s.writable()
	if status == plan.Completed || status == plan.Canceled {
		next.Items = slices.Delete(next.Items, i, i+1)
		if status == plan.Completed {
			next.Completed++
		} else {
			next.Canceled++
		}
		e.Removed = true
	} else {
		next.Items[i] = it
	}
	e.Item = it
	return next, e, nil
}

// reopen returns deferred items waiting on any of tasks to pending, and
// reports whether any did.
func (s state) reopen(tasks []string) (state, bool) {
	changed := false
	var next state
	for i, it := range s.Items {
		if it.Status != plan.Deferred || it.Task == "" || !slices.Contains(tasks, it.Task) {
			continue
		}
		if !changed {
			next, changed = s.writable(), true
		}
		next.Items[i].Status, next.Items[i].Reason, next.Items[i].Task = plan.Pending, "", ""
	}
	if !changed {
		return s, false
	}
	return next, true
}

// pickUp reopens the deferred items ids names, as a person picking them
// up does: pending again, their reason and task dropped. Other ids
// change nothing.
func (s state) pickUp(ids []string) (state, bool) {
	changed := false
	var next state
	for i, it := range s.Items {
		if it.Status != plan.Deferred || !slices.Contains(ids, it.ID) {
			continue
		}
		if !changed {
			next, changed = s.writable(), true
		}
		next.Items[i].Status, next.Items[i].Reason, next.Items[i].Task = plan.Pending, "", ""
	}
	if !changed {
		return s, false
	}
	return next, true
}

// line renders one item for the model: its id, its state and its text.
func line(it plan.Item) string {
	var b strings.Builder
	b.WriteString("- ")
	b.WriteString(it.ID)
	b.WriteString(" [")
	switch it.Status {
	case plan.InProgress:
		b.WriteString("in progress")
	case plan.Deferred:
		b.WriteString("deferred: ")
		b.WriteString(it.Reason)
		if it.Task != "" {
			b.WriteString("; waits on background task ")
			b.WriteString(it.Task)
		}
	default:
		b.WriteString(string(it.Status))
	}
	b.WriteString("] ")
	b.WriteString(it.Text)
	return b.String()
}

func lines(items []plan.Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line(it))
	}
	return b.String()
}

// render shows the whole list, as every tool result does.
func (s state) render() string {
	if len(s.Items) == 0 {
		return "The checklist is empty."
	}
	return "The checklist:\n" + lines(s.Items)
}

// counted is n with its word: "1 item", "3 items".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
