package writetodos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"meka.dev/meka/plan"
)

// Bounds on a list.
const (
	// MaxItems is how many items a list may hold.
	MaxItems = 128
	// MaxContentBytes bounds an item's content and active form.
	MaxContentBytes = 1000
)

// Todo is one item of a write_todos list.
type Todo struct {
	// ID is the item's stable id: s1, s2, ... in the order items were
	// first written.
	ID      string      `json:"id"`
	Content string      `json:"content"`
	Status  plan.Status `json:"status"`
	// ActiveForm is the present-continuous label front doors show while
	// the item is in progress ("Writing tests").
	ActiveForm string `json:"activeForm,omitempty"`
	// At is when the item was first written.
	At time.Time `json:"at"`
	// CompletedAt is when it was last marked completed; nil while it is
	// not completed.
	CompletedAt *time.Time `json:"completedAt,omitempty"`
}

// Item returns the todo in the shared item model, its active form
// defaulting to its content.
func (t Todo) Item() plan.Item {
	af := t.ActiveForm
	if af == "" {
		af = t.Content
	}
	return plan.Item{ID: t.ID, Text: t.Content, Status: t.Status, ActiveForm: af}
}

// state is a session's list as its log adds it up.
type state struct {
	Items []Todo `json:"items"`
	// Stale is set by a new user turn and cleared by the agent's next
	// accepted write.
	Stale bool `json:"stale,omitempty"`
}

func (st state) clone() state {
	return state{Items: slices.Clone(st.Items), Stale: st.Stale}
}

func (st state) open() []Todo {
	var out []Todo
	for _, t := range st.Items {
		if t.Status.Open() {
			out = append(out, t)
		}
	}
	return out
}

func (st state) find(id string) int {
	return slices.IndexFunc(st.Items, func(t Todo) bool { return t.ID == id })
}

func parseStatus(s string) (plan.Status, bool) {
	switch st := plan.Status(s); st {
	case plan.Pending, plan.InProgress, plan.Completed, plan.Cancelled:
		return st, true
	}
	return "", false
}

// setStatus changes an item's status, keeping CompletedAt for the time it
// became completed.
func (t *Todo) setStatus(s plan.Status, now time.Time) {
	switch {
	case s == plan.Completed && t.Status != plan.Completed:
		at := now
		t.CompletedAt = &at
	case s != plan.Completed:
		t.CompletedAt = nil
	}
	t.Status = s
}

// The arguments of a write_todos call.
type todoArg struct {
	Content    string  `json:"content"`
	Status     string  `json:"status"`
	ActiveForm *string `json:"activeForm,omitempty"`
	ID         string  `json:"id,omitempty"`
}

type updateArg struct {
	ID         string  `json:"id"`
	Status     *string `json:"status,omitempty"`
	Content    *string `json:"content,omitempty"`
	ActiveForm *string `json:"activeForm,omitempty"`
}

type writeArgs struct {
	Todos   []todoArg   `json:"todos,omitempty"`
	Updates []updateArg `json:"updates,omitempty"`
}

// The refusals the spec words exactly.
const (
	msgRemove  = "cannot remove existing todos. Use status: cancelled instead."
	msgReplace = "cannot replace or reorder existing todos; use updates with stable IDs"
)

// refusal is why a write changed nothing; the tool appends the current
// list to it.
type refusal struct{ msg string }

func (r refusal) Error() string { return r.msg }

func refusef(format string, args ...any) refusal { return refusal{fmt.Sprintf(format, args...)} }

func unknownID(id string, cur state) refusal {
	if len(id) > lineIDCap {
		id = plan.Clamp(id, lineIDCap) + "…"
	}
	return refusal{"unknown todo ID: " + id + ". Available IDs: " + idRuns(cur.Items)}
}

// idRuns lists the items' IDs, a run of five or more consecutive
// assigned IDs as its ends ("s1–s128"), so the IDs of a full list stay
// a few bytes and the refusal within errorCap.
func idRuns(items []Todo) string {
	if len(items) == 0 {
		return "(none)"
	}
	num := func(id string) int {
		if n, err := strconv.Atoi(strings.TrimPrefix(id, "s")); err == nil && strings.HasPrefix(id, "s") && n > 0 {
			return n
		}
		return -1
	}
	var b strings.Builder
	for i := 0; i < len(items); {
		j := i
		if n := num(items[i].ID); n > 0 {
			for j+1 < len(items) && num(items[j+1].ID) == n+(j+1-i) {
				j++
			}
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		if j-i >= 4 {
			b.WriteString(items[i].ID + "–" + items[j].ID)
		} else {
			for k := i; k <= j; k++ {
				if k > i {
					b.WriteString(", ")
				}
				b.WriteString(plan.Clamp(items[k].ID, lineIDCap))
			}
		}
		i = j + 1
	}
	return b.String()
}

func checkText(label, field, s string) error {
	if len(s) > MaxContentBytes {
		return refusef("%s.%s is %d bytes; at most %d", label, field, len(s), MaxContentBytes)
	}
	return nil
}

// write computes a call's outcome on cur, stamped with now: todos create
// the list or append to it (the existing items resubmitted unchanged, in
// order, then the new ones), then updates change items by id. Nothing
// else may touch an existing item.
func (cur state) write(a writeArgs, now time.Time) (state, error) {
	if len(a.Todos) == 0 && len(a.Updates) == 0 {
		return cur, refusef("write_todos needs todos (to create the list or append to it) or updates (to change items by ID)")
	}
	next := state{Items: slices.Clone(cur.Items)}
	if len(a.Todos) > 0 {
		if len(a.Todos) < len(cur.Items) {
			return cur, refusal{msgRemove}
		}
		for i, t := range a.Todos {
			label := fmt.Sprintf("todos[%d]", i)
			content := strings.TrimSpace(plan.OneLine(t.Content))
			st, ok := parseStatus(t.Status)
			switch {
			case content == "":
				return cur, refusef("%s.content is empty", label)
			case !ok:
				return cur, refusef("%s.status is %q; use pending, in_progress, completed or cancelled", label, t.Status)
			}
			if err := checkText(label, "content", content); err != nil {
				return cur, err
			}
			if t.ActiveForm != nil {
				if err := checkText(label, "activeForm", *t.ActiveForm); err != nil {
					return cur, err
				}
			}
			if i < len(cur.Items) {
				old := cur.Items[i]
				if content != old.Content || st != old.Status || (t.ID != "" && t.ID != old.ID) ||
					(t.ActiveForm != nil && strings.TrimSpace(plan.OneLine(*t.ActiveForm)) != old.Item().ActiveForm) {
					return cur, refusal{msgReplace}
				}
				continue
			}
			if t.ID != "" && t.ID != newID(i) {
				return cur, refusef("%s gives ID %q, but a new item gets ID %s; IDs are assigned, not chosen", label, t.ID, newID(i))
			}
			if i >= MaxItems {
				return cur, refusef("%s would be item %d; a list holds at most %d items", label, i+1, MaxItems)
			}
			td := Todo{ID: newID(i), Content: content, At: now}
			if t.ActiveForm != nil {
				td.ActiveForm = strings.TrimSpace(plan.OneLine(*t.ActiveForm))
			}
			td.setStatus(st, now)
			next.Items = append(next.Items, td)
		}
	}
	seen := make(map[string]int, len(a.Updates))
	for i, u := range a.Updates {
		label := fmt.Sprintf("updates[%d]", i)
		j := next.find(u.ID)
		if j < 0 {
			return cur, unknownID(u.ID, cur)
		}
		if k, ok := seen[u.ID]; ok {
			return cur, refusef("updates[%d] and %s both change %s; give each ID once", k, label, u.ID)
		}
		seen[u.ID] = i
		td := &next.Items[j]
		if u.Content != nil && strings.TrimSpace(plan.OneLine(*u.Content)) != td.Content {
			// A rewrite would erase what was committed to; the record of
			// a change of scope is a cancelled item beside a new one.
			return cur, refusef("%s (%s) rewrites the item's content; an item's content never changes. Mark %s cancelled and add the new item with todos (the existing items unchanged, then the new one)", label, u.ID, u.ID)
		}
		if u.ActiveForm != nil {
			if err := checkText(label, "activeForm", *u.ActiveForm); err != nil {
				return cur, err
			}
			td.ActiveForm = strings.TrimSpace(plan.OneLine(*u.ActiveForm))
		}
		if u.Status != nil {
			st, ok := parseStatus(*u.Status)
			if !ok {
				return cur, refusef("%s (%s) has status %q; use pending, in_progress, completed or cancelled", label, u.ID, *u.Status)
			}
			if st == plan.Pending && (td.Status == plan.Completed || td.Status == plan.Cancelled) {
				// Back to pending would hide that the item was once
				// declared done or dropped.
				return cur, refusef("%s (%s) moves a %s item back to pending, which the list does not allow. If the work is to be done after all, add it as a new item with todos; to redo a completed item now, mark it in_progress", label, u.ID, td.Status)
			}
			td.setStatus(st, now)
		}
	}
	return next, nil
}

func newID(i int) string { return "s" + strconv.Itoa(i+1) }

func parseArgs(raw json.RawMessage) (writeArgs, error) {
	var a writeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, refusef("the arguments are not a write_todos call: %v", err)
	}
	return a, nil
}

// checkpoint is the fold's recorded state.
func encodeState(st state) json.RawMessage {
	if st.Items == nil {
		st.Items = []Todo{}
	}
	b, err := json.Marshal(st)
	if err != nil {
		// Strings and times only; Marshal cannot fail.
		panic(fmt.Sprintf("encode todos: %v", err))
	}
	return b
}

func decodeState(raw json.RawMessage) (state, error) {
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return state{}, err
	}
	for i, t := range st.Items {
		if _, ok := parseStatus(string(t.Status)); !ok || t.ID == "" {
			return state{}, fmt.Errorf("item %d: id %q status %q", i+1, t.ID, t.Status)
		}
	}
	return st, nil
}
