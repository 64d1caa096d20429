package todo

import (
	"context"
	"encoding/json"
	"fmt"
	"meka.dev/meka/plan"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// The tools' names; the model sees exactly these.
const (
	UpdateName = "update_plan"
	PatchName  = "patch_plan"
)

const statusHelp = `Statuses: "pending", "in_progress" (at most one step at a time), "completed", "blocked" (cannot proceed until something outside your reach changes; say what in your reply), "abandoned" (deliberately not done; say why).`

const updateDescription = `Write your plan for this run: the whole list of steps, replacing the previous one. The plan is shown to you before every request as your live todo list, so keep it current: mark the step you are starting "in_progress" and each finished step "completed" as you go.

` + statusHelp + `

Each step is {"step": text, "status": ..., "id"?: ..., "phase"?: ...}. Give ids (at most 64 bytes, unique) to steps you may later change with patch_plan; a phase (at most 160 bytes) groups steps. At most 128 steps; a step's text is cut at 160 bytes. Only the 5 most recent completed steps stay on the list; older ones are folded into a count ("[x] (N earlier steps completed)") and can no longer be patched. Send back the list as you were shown it, changed where it changed.

A call with anything wrong in it is refused whole and changes nothing; the refusal names the step at fault and shows the current plan. The result shows the plan as stored.`

const patchDescription = `Change steps of your plan by id without resending it: up to 128 operations applied in order, each {"action": "add"|"replace"|"remove", "id": ..., "item"?: {"step": ..., "status": ..., "phase"?: ...}}. add appends a new step with that id; replace swaps the step with that id for the complete item given; remove takes it off the list. Only steps that have an id (given with update_plan or add) can be targets.

` + statusHelp + `

The whole resulting plan is checked before anything changes (unique ids, at most one step in progress, at most 128 steps): if any operation is wrong, none is applied, and the refusal names the operation or step at fault and shows the current plan. The result shows the plan as stored.`

const stepSchema = `{
  "type": "object",
  "properties": {
    "step": {"type": "string", "description": "What the step is; cut at 160 bytes."},
    "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "blocked", "abandoned"]},
    "id": {"type": "string", "description": "A stable id for patch_plan, at most 64 bytes."},
    "phase": {"type": "string", "description": "The phase the step belongs to, at most 160 bytes."}
  },
  "required": ["step", "status"],
  "additionalProperties": false
}`

const updateSchema = `{
  "type": "object",
  "properties": {
    "explanation": {"type": "string", "description": "Why the plan changed, if it did."},
    "plan": {"type": "array", "description": "The whole plan, in order.", "items": ` + stepSchema + `}
  },
  "required": ["plan"],
  "additionalProperties": false
}`

const patchSchema = `{
  "type": "object",
  "properties": {
    "operations": {
      "type": "array",
      "description": "The operations, applied in order.",
      "items": {
        "type": "object",
        "properties": {
          "action": {"type": "string", "enum": ["add", "replace", "remove"]},
          "id": {"type": "string", "description": "The id of the step to add, replace or remove."},
          "item": ` + stepSchema + `
        },
        "required": ["action", "id"],
        "additionalProperties": false
      }
    }
  },
  "required": ["operations"],
  "additionalProperties": false
}`

// planTool is update_plan or patch_plan. Both compute the plan a call
// would leave from the store without changing it; the fold applies the
// outcome once the session accepts the call.
type planTool struct {
	name, desc, schema string
	store              *Store
}

var _ tool.Tool = planTool{}

func (t planTool) Spec() tool.Spec {
	// Not parallel-safe: a call computes from the plan the calls before it
	// in the round left.
	return tool.Spec{Name: t.name, Description: t.desc, Schema: json.RawMessage(t.schema),
		Level: permission.Read, Kind: tool.KindThink, Bookkeeping: true}
}

func (t planTool) Title(args json.RawMessage) string {
	if t.name == PatchName {
		var a patchArgs
		if json.Unmarshal(args, &a) == nil && len(a.Operations) > 0 {
			return fmt.Sprintf("Plan: %d %s", len(a.Operations), plan.Plural(len(a.Operations), "change", "changes"))
		}
	}
	return "Plan"
}

// Run validates the call against the current plan and returns the plan it
// leaves, recorded in the result's State so a replay adopts exactly it. A
// refusal changes nothing and shows the current plan.
func (t planTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	s := t.store
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.head()
	next, err := cur.apply(t.name, c.Arguments)
	if err != nil {
		r := tool.Errorf("%s refused: %v. Nothing was changed.\nThe current plan:\n%s", t.name, err, renderPlan(cur, replyCap))
		return r, nil
	}
	s.pending = append(s.pending, outcome{callID: c.ID, st: next})
	r := tool.Text("Plan updated.\n" + renderPlan(next, replyCap))
	r.State = encodeState(next, 0)
	return r, nil
}
