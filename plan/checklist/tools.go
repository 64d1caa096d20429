package checklist

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/tool"
)

// The tools' names; the model sees exactly these.
const (
	addName  = "checklist_add"
	editName = "checklist_edit"
	readName = "checklist_read"
)

// deferralRule is said wherever deferral is offered: in the tool
// descriptions and in the nudge.
const deferralRule = "Deferral is for an item that waits on a person, an event or an explicit later, never for one that is hard or tedious."

const addDescription = `Add items to your checklist, as you commit to them: what you will do in this session. Mark the one you start on "in_progress". An item is a text or {"text": ..., "status": "pending"|"in_progress"}; ids are c1, c2, ... in the order added. The result gives the ids and the whole list.

Your turn cannot end while an item is pending or in_progress: complete it, or cancel or defer it with a reason (checklist_edit). ` + deferralRule

const editDescription = `Change one checklist item by id: its status, reason, awaited background task, or text.

Statuses: pending, in_progress, deferred, completed, canceled; completed and canceled items leave the list. Canceling needs a reason (why it is no longer to be done); deferring needs one (what it waits on) and may name a background task, whose report reopens the item. ` + deferralRule + `

Re-deferring with a new reason replaces what the item waits on and drops a task not named again; with neither, it keeps both. A call with anything wrong (unknown id, missing reason, a task that does not exist or already reported) is refused whole. The result shows the whole list.`

const readDescription = `Show your checklist: every item on it with its id, status, and for a deferred item what it waits on.`

const addSchema = `{
  "type": "object",
  "properties": {
    "items": {
      "type": "array",
      "description": "The items to add, in order.",
      "items": {
        "anyOf": [
          {"type": "string"},
          {
            "type": "object",
            "properties": {
              "text": {"type": "string"},
              "status": {"type": "string", "enum": ["pending", "in_progress"]}
            },
            "required": ["text"],
            "additionalProperties": false
          }
        ]
      }
    }
  },
  "required": ["items"],
  "additionalProperties": false
}`

const editSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "string", "description": "The item's id, such as c1."},
    "status": {"type": "string", "enum": ["pending", "in_progress", "deferred", "completed", "canceled"]},
    "reason": {"type": "string", "description": "Why the item is canceled, or what a deferred item waits on."},
    "task": {"type": "string", "description": "The background task a deferred item waits on."},
    "text": {"type": "string", "description": "The item's new text."}
  },
  "required": ["id"],
  "additionalProperties": false
}`

const readSchema = `{"type": "object", "properties": {}, "additionalProperties": false}`

func spec(name, desc, schema string) tool.Spec {
	// Not parallel-safe: a call computes from the list the calls before
	// it in the round left.
	return tool.Spec{Name: name, Description: desc, Schema: json.RawMessage(schema),
		Level: permission.Read, Kind: tool.KindThink, Bookkeeping: true}
}

// result is a successful call's result: what happened and the whole list.
func result(head string, st state, assigned []string) tool.Result {
	text := st.render()
	if head != "" {
		text = head + "\n\n" + text
	}
	r := tool.Text(text)
	r.State = recordState(st, assigned)
	return r
}

// refusal is a refused call's result: why, and the list as it stands.
func refusal(name string, err error, st state) tool.Result {
	r := tool.Errorf("%s refused, nothing changed: %v.\n\n%s", name, err, st.render())
	r.State = recordState(st, nil)
	return r
}

// recorded is a result's structured state, for front doors.
type recorded struct {
	Assigned []string    `json:"assigned,omitempty"`
	Items    []plan.Item `json:"items"`
}

func recordState(st state, assigned []string) json.RawMessage {
	items := st.Items
	if items == nil {
		items = []plan.Item{}
	}
	b, _ := json.Marshal(recorded{Assigned: assigned, Items: items})
	return b
}

type addTool struct{ p *Plugin }

func (t addTool) Spec() tool.Spec { return spec(addName, addDescription, addSchema) }

func (t addTool) Title(args json.RawMessage) string {
	a, err := parseAdd(args)
	if err != nil || len(a.Items) == 0 {
		return ""
	}
	return "Checklist: add " + counted(len(a.Items), "item", "items")
}

func (t addTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	f := t.p.fold
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.head()
	a, err := parseAdd(c.Arguments)
	if err != nil {
		return refusal(addName, err, cur), nil
	}
	next, ids, err := cur.add(a)
	if err != nil {
		return refusal(addName, err, cur), nil
	}
	f.unfolded = append(f.unfolded, unfoldedCall{id: c.ID, name: addName, args: c.Arguments})
	return result("Added "+strings.Join(ids, ", ")+".", next, ids), nil
}

type editTool struct{ p *Plugin }

func (t editTool) Spec() tool.Spec { return spec(editName, editDescription, editSchema) }

func (t editTool) Title(args json.RawMessage) string {
	a, err := parseEdit(args)
	if err != nil || a.ID == "" {
		return ""
	}
	if a.Status != "" {
		return "Checklist: " + a.ID + " " + strings.ReplaceAll(string(a.Status), "_", " ")
	}
	return "Checklist: edit " + a.ID
}

func (t editTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	f := t.p.fold
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.head()
	a, err := parseEdit(c.Arguments)
	if err != nil {
		return refusal(editName, err, cur), nil
	}
	next, e, err := cur.edit(a)
	if err == nil {
		err = t.checkTasks(a, e)
	}
	if err != nil {
		return refusal(editName, err, cur), nil
	}
	f.unfolded = append(f.unfolded, unfoldedCall{id: c.ID, name: editName, args: c.Arguments})
	return result(describe(e), next, nil), nil
}

// checkTasks refuses a deferral on a task that does not exist or has
// already reported: the item would be open the moment it was deferred.
// Only a live call checks; the fold trusts what was accepted.
func (t editTool) checkTasks(a editArgs, e edited) error {
	if a.Task != "" {
		exists, reported := t.p.taskState(a.Task)
		switch {
		case !exists:
			return fmt.Errorf("there is no background task %q in this session", a.Task)
		case reported:
			return fmt.Errorf("background task %s has already reported, so the item would be open the moment it was deferred; work on it, or defer it on something else", a.Task)
		}
	}
	if e.KeptTask != "" {
		if exists, reported := t.p.taskState(e.KeptTask); exists && reported {
			return fmt.Errorf("this re-deferral would keep background task %s, which has already reported; give a new reason to drop it, or name another task", e.KeptTask)
		}
	}
	return nil
}

func describe(e edited) string {
	it := e.Item
	switch it.Status {
	case plan.Completed:
		return it.ID + " is completed and off the list."
	case plan.Canceled:
		return it.ID + " is canceled (" + it.Reason + ") and off the list."
	case plan.Deferred:
		s := it.ID + " is deferred: " + it.Reason
		if it.Task != "" {
			s += "; it reopens when background task " + it.Task + " reports"
		}
		return s + "."
	case plan.InProgress:
		return it.ID + " is in progress."
	}
	return it.ID + " is " + string(it.Status) + "."
}

type readTool struct{ p *Plugin }

func (t readTool) Spec() tool.Spec { return spec(readName, readDescription, readSchema) }

func (t readTool) Run(context.Context, tool.Call) (tool.Result, error) {
	f := t.p.fold
	f.mu.Lock()
	defer f.mu.Unlock()
	return result("", f.head(), nil), nil
}

var (
	_ tool.Tool   = addTool{}
	_ tool.Titler = addTool{}
	_ tool.Tool   = editTool{}
	_ tool.Titler = editTool{}
	_ tool.Tool   = readTool{}
)
