package todo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"meka.dev/meka/plan"
)

// stepArg is a step as the model sends it.
type stepArg struct {
	Step   string `json:"step"`
	Status string `json:"status"`
	ID     string `json:"id,omitempty"`
	Phase  string `json:"phase,omitempty"`
}

type updateArgs struct {
	Explanation string    `json:"explanation,omitempty"`
	Plan        []stepArg `json:"plan"`
}

type opArg struct {
	Action string   `json:"action"`
	ID     string   `json:"id"`
	Item   *stepArg `json:"item,omitempty"`
}

type patchArgs struct {
	Operations []opArg `json:"operations"`
}

// refusal is why a call changed nothing, naming the step or operation at
// fault.
type refusal string

func (r refusal) Error() string { return string(r) }

func refusef(format string, args ...any) refusal { return refusal(fmt.Sprintf(format, args...)) }

func parseStatus(s string) (plan.Status, bool) {
	switch st := plan.Status(s); st {
	case plan.Pending, plan.InProgress, plan.Completed, plan.Blocked, plan.Abandoned:
		return st, true
	}
	return "", false
}

// item validates one step and returns it as stored: its text on one line,
// trimmed and clamped to MaxStepBytes.
func (a stepArg) item(label string) (plan.Item, error) {
	st, ok := parseStatus(a.Status)
	if !ok {
		return plan.Item{}, refusef("%s has status %q; use pending, in_progress, completed, blocked or abandoned", label, a.Status)
	}
	text := plan.Clamp(strings.TrimSpace(plan.OneLine(a.Step)), MaxStepBytes)
	if text == "" {
		return plan.Item{}, refusef("%s has no text", label)
	}
	if len(a.ID) > MaxIDBytes {
		return plan.Item{}, refusef("%s has an id of %d bytes; ids are at most %d bytes", label, len(a.ID), MaxIDBytes)
	}
	if len(a.Phase) > MaxPhaseBytes {
		return plan.Item{}, refusef("%s has a phase of %d bytes; a phase is at most %d bytes", label, len(a.Phase), MaxPhaseBytes)
	}
	return plan.Item{ID: a.ID, Text: text, Status: st, Phase: strings.TrimSpace(plan.OneLine(a.Phase))}, nil
}

// stepLabel names the i-th step (0-based) of a list for a refusal.
func stepLabel(i int, it plan.Item) string {
	if it.ID != "" {
		return fmt.Sprintf("step %d (id %q)", i+1, it.ID)
	}
	return fmt.Sprintf("step %d (%q)", i+1, plan.Clamp(it.Text, 40))
}

// checkPlan validates a whole resulting plan: its size, unique ids and at
// most one step in progress.
func checkPlan(items []plan.Item) error {
	if len(items) > MaxItems {
		return refusef("the plan would have %d steps, more than the %d allowed (steps %d to %d are over the limit); fold finished work into fewer steps", len(items), MaxItems, MaxItems+1, len(items))
	}
	seen := make(map[string]int, len(items))
	active := -1
	for i, it := range items {
		if it.ID != "" {
			if j, ok := seen[it.ID]; ok {
				return refusef("%s and %s have the same id; ids must be unique", stepLabel(j, items[j]), stepLabel(i, it))
			}
			seen[it.ID] = i
		}
		if it.Status == plan.InProgress {
			if active >= 0 {
				return refusef("%s and %s are both in_progress; at most one step may be in progress, so mark the other pending, completed, blocked or abandoned", stepLabel(active, items[active]), stepLabel(i, it))
			}
			active = i
		}
	}
	return nil
}

// replace computes update_plan's outcome: the new list, validated whole,
// with completed steps folded. The retired count carries over: the model
// sends back the folded list it was shown.
func (st state) replace(a updateArgs) (state, error) {
	if len(a.Plan) > MaxItems {
		return st, refusef("the plan has %d steps, more than the %d allowed (steps %d to %d are over the limit); fold finished work into fewer steps", len(a.Plan), MaxItems, MaxItems+1, len(a.Plan))
	}
	items := make([]plan.Item, 0, len(a.Plan))
	for i, s := range a.Plan {
		label := fmt.Sprintf("step %d", i+1)
		if s.ID != "" && len(s.ID) <= MaxIDBytes {
			label += fmt.Sprintf(" (id %q)", s.ID)
		}
		it, err := s.item(label)
		if err != nil {
			return st, err
		}
		items = append(items, it)
	}
	if err := checkPlan(items); err != nil {
		return st, err
	}
	return state{Items: items, Retired: st.Retired}.fold(), nil
}

// patch computes patch_plan's outcome: the operations applied in order to
// a copy, the result validated whole. Any failure changes nothing.
func (st state) patch(a patchArgs) (state, error) {
	if len(a.Operations) == 0 {
		return st, refusef("no operations given")
	}
	if len(a.Operations) > MaxOps {
		return st, refusef("%d operations given, more than the %d allowed in one call (operations %d to %d are over the limit)", len(a.Operations), MaxOps, MaxOps+1, len(a.Operations))
	}
	items := make([]plan.Item, len(st.Items))
	copy(items, st.Items)
	find := func(id string) int {
		for i, it := range items {
			if it.ID == id {
				return i
			}
		}
		return -1
	}
	for n, op := range a.Operations {
		label := fmt.Sprintf("operation %d (%s %q)", n+1, op.Action, plan.Clamp(op.ID, MaxIDBytes))
		if op.ID == "" {
			return st, refusef("operation %d (%s) has no id", n+1, op.Action)
		}
		if len(op.ID) > MaxIDBytes {
			return st, refusef("%s: the id is %d bytes; ids are at most %d bytes", label, len(op.ID), MaxIDBytes)
		}
		at := find(op.ID)
		var it plan.Item
		if op.Action == "add" || op.Action == "replace" {
			if op.Item == nil {
				return st, refusef("%s has no item; %s needs the complete step", label, op.Action)
			}
			if op.Item.ID != "" && op.Item.ID != op.ID {
				return st, refusef("%s: the item's id %q differs from the operation's", label, op.Item.ID)
			}
			s := *op.Item
			s.ID = op.ID
			var err error
			if it, err = s.item(label); err != nil {
				return st, err
			}
		}
		switch op.Action {
		case "add":
			if at >= 0 {
				return st, refusef("%s: step %d already has that id; use replace to change it", label, at+1)
			}
			items = append(items, it)
		case "replace", "remove":
			if at < 0 {
				return st, refusef("%s: no step has that id (%s); completed steps folded into the count are no longer targets", label, idList(items))
			}
			if op.Action == "replace" {
				items[at] = it
			} else {
				items = append(items[:at], items[at+1:]...)
			}
		default:
			return st, refusef("operation %d has action %q; use add, replace or remove", n+1, op.Action)
		}
	}
	if err := checkPlan(items); err != nil {
		return st, err
	}
	return state{Items: items, Retired: st.Retired}.fold(), nil
}

// idList names the ids a patch may target.
func idList(items []plan.Item) string {
	var ids []string
	for _, it := range items {
		if it.ID != "" {
			ids = append(ids, strconv.Quote(it.ID))
		}
	}
	if len(ids) == 0 {
		return "no step in the plan has an id; give ids with update_plan"
	}
	return "ids in the plan: " + strings.Join(ids, ", ")
}

// apply computes a call's outcome from its name and arguments.
func (st state) apply(name string, args json.RawMessage) (state, error) {
	switch name {
	case UpdateName:
		var a updateArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return st, refusef("the arguments are not an update_plan call: %v", err)
		}
		return st.replace(a)
	case PatchName:
		var a patchArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return st, refusef("the arguments are not a patch_plan call: %v", err)
		}
		return st.patch(a)
	}
	return st, refusef("unknown plan tool %q", name)
}
