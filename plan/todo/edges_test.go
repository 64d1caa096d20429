package todo

import (
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// uniform returns n pending steps whose lines are all the same length.
func uniform(n int) []plan.Item {
	items := make([]plan.Item, n)
	for i := range items {
		items[i] = plan.Item{Text: fmt.Sprintf("step %03d", i), Status: plan.Pending}
	}
	return items
}

// A plan that fits the budget exactly is shown whole, the retired count's
// line included in the budget; a byte less and the last step is counted
// instead of shown.
func TestBodyExactFit(t *testing.T) {
	items := uniform(10)
	line := lineLen(items[0])
	retired := "[x] (7 earlier steps completed)\n"
	for _, tc := range []struct {
		budget int
		shown  int
	}{
		{len(retired) + 10*line, 10},
		{len(retired) + 10*line - 1, -1}, // some are left out
	} {
		// After a header, as Reminder writes it: the budget is the body's.
		var b strings.Builder
		b.WriteString(ReminderHeader)
		writeBody(&b, items, 7, tc.budget)
		got := strings.TrimPrefix(b.String(), ReminderHeader)
		if len(got) > tc.budget {
			t.Errorf("budget %d: %d bytes written", tc.budget, len(got))
		}
		n := strings.Count(got, "\n[ ] step ")
		switch {
		case tc.shown >= 0 && (n != tc.shown || strings.Contains(got, "further step")):
			t.Errorf("budget %d: %d steps shown, want %d:\n%s", tc.budget, n, tc.shown, got)
		case tc.shown < 0 && (n >= 10 || !strings.Contains(got, fmt.Sprintf("… (%d further steps", 10-n))):
			t.Errorf("budget %d: %d steps shown and no count of the rest:\n%s", tc.budget, n, got)
		}
		if !strings.HasPrefix(got, retired) {
			t.Errorf("budget %d: does not start with the retired count:\n%s", tc.budget, got)
		}
	}
}

// When the plan does not fit, exactly as many steps are shown as fit with
// the count of the rest, and the output never passes the budget.
func TestBodyFillsTheBudget(t *testing.T) {
	items := uniform(300)
	line := lineLen(items[0])
	for _, k := range []int{1, 2, 50, 120} {
		budget := k*line + furtherLen(len(items))
		var b strings.Builder
		writeBody(&b, items, 0, budget)
		got := b.String()
		if n := strings.Count(got, "[ ] step "); n != k {
			t.Errorf("budget for %d steps: %d shown", k, n)
		}
		if len(got) > budget {
			t.Errorf("budget %d: %d bytes written", budget, len(got))
		}
		if !strings.HasSuffix(got, fmt.Sprintf("… (%d further steps in the plan, not shown here)\n", 300-k)) {
			t.Errorf("budget for %d steps: count line missing:\n%s", k, got[max(0, len(got)-200):])
		}
	}
}

// Past the anchor's steps, the ones before it are taken nearest first, down
// to the first.
func TestBodyTakesTheStepsBeforeTheAnchor(t *testing.T) {
	items := []plan.Item{
		{Text: "a", Status: plan.Completed},
		{Text: "b", Status: plan.InProgress},
		{Text: strings.Repeat("long ", 30), Status: plan.Pending},
	}
	budget := lineLen(items[0]) + lineLen(items[1]) + furtherLen(len(items))
	var b strings.Builder
	writeBody(&b, items, 0, budget)
	want := "[x] a\n[~] b\n… (1 further step in the plan, not shown here)\n"
	if got := b.String(); got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
}

func TestAnchor(t *testing.T) {
	c, p, ip := plan.Completed, plan.Pending, plan.InProgress
	for _, tc := range []struct {
		st   []plan.Status
		want int
	}{
		{[]plan.Status{c, c, p, p}, 2},
		{[]plan.Status{c, p, ip}, 2},
		{[]plan.Status{c, c}, 0},
		{[]plan.Status{p}, 0},
		{[]plan.Status{p, p}, 0},
	} {
		items := make([]plan.Item, len(tc.st))
		for i, s := range tc.st {
			items[i] = plan.Item{Text: "x", Status: s}
		}
		if got := anchor(items); got != tc.want {
			t.Errorf("anchor(%v) = %d, want %d", tc.st, got, tc.want)
		}
	}
}

// A plan whose steps were all folded into the count still shows it.
func TestRenderRetiredOnly(t *testing.T) {
	if got := renderPlan(state{Retired: 3}, 1000); got != "[x] (3 earlier steps completed)" {
		t.Errorf("renderPlan = %q", got)
	}
	if got := renderPlan(state{}, 1000); got != "(the plan is empty)" {
		t.Errorf("renderPlan of nothing = %q", got)
	}
}

// A fork's fold takes a checkpoint or a call from its own first turn on,
// and ignores its parent's.
func TestForkFoldFromItsFirstTurn(t *testing.T) {
	ours := state{Items: []plan.Item{{Text: "ours", Status: plan.Pending}}}
	for _, tc := range []struct {
		from, turn int64
		adopted    bool
	}{
		{3, 2, false},
		{3, 3, true},
		{3, 4, true},
		{0, 1, true},
	} {
		f := &Fold{store: NewStore(), from: tc.from}
		f.Reset()
		if err := f.Restore(encodeState(ours, tc.turn)); err != nil {
			t.Fatal(err)
		}
		if got := len(f.store.Items()) == 1; got != tc.adopted {
			t.Errorf("from %d, checkpoint of turn %d: adopted %v, want %v", tc.from, tc.turn, got, tc.adopted)
		}

		f.Reset()
		f.Apply(session.Step{Row: session.Row{Turn: tc.turn, Entry: session.ToolResult{CallID: "c", Name: UpdateName,
			Status: session.StatusOK, State: encodeState(ours, tc.turn)}}})
		if got := len(f.store.Items()) == 1; got != tc.adopted {
			t.Errorf("from %d, call in turn %d: adopted %v, want %v", tc.from, tc.turn, got, tc.adopted)
		}
	}
}

// lineLen is exactly the length writeLine writes, with and without an id
// and a phase; furtherLen is exactly the count line's for its count.
func TestLineLengths(t *testing.T) {
	for _, it := range []plan.Item{
		{Text: "plain", Status: plan.Pending},
		{Text: "with id", Status: plan.Completed, ID: "a1"},
		{Text: "with phase", Status: plan.InProgress, Phase: "build"},
		{Text: "with both", Status: plan.Blocked, ID: "q", Phase: "release"},
		{Text: strings.Repeat("é", 200), Status: plan.Pending, ID: strings.Repeat("i", 100), Phase: strings.Repeat("p", 300)},
	} {
		var b strings.Builder
		writeLine(&b, it)
		if got := lineLen(it); got != b.Len() {
			t.Errorf("lineLen(%q) = %d, writeLine wrote %d", b.String(), got, b.Len())
		}
	}
	items := uniform(120)
	var b strings.Builder
	writeBody(&b, items, 0, lineLen(items[0])+furtherLen(len(items)))
	countLine := b.String()[strings.Index(b.String(), "…"):]
	if got := furtherLen(len(items)); got != len(countLine) {
		t.Errorf("furtherLen(120) = %d, the line %q is %d", got, countLine, len(countLine))
	}
}

// A checkpoint with a step of no known status is refused, naming the step
// from 1.
func TestDecodeStateNamesTheStep(t *testing.T) {
	_, _, err := decodeState([]byte(`{"items":[{"text":"a","status":"pending"},{"text":"b","status":"sideways"}]}`))
	if err == nil || err.Error() != `step 2 has status "sideways"` {
		t.Errorf("decodeState = %v", err)
	}
}

// A plan over MaxItems is refused naming the steps past the limit.
func TestCheckPlanNamesTheStepsOver(t *testing.T) {
	err := checkPlan(uniform(MaxItems + 2))
	want := fmt.Sprintf("steps %d to %d are over the limit", MaxItems+1, MaxItems+2)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("checkPlan = %v, want it to say %q", err, want)
	}
}

func TestPlanTitles(t *testing.T) {
	for _, tc := range []struct{ name, args, want string }{
		{PatchName, `{"operations":[{"action":"remove","id":"a"},{"action":"remove","id":"b"}]}`, "Plan: 2 changes"},
		{PatchName, `{"operations":[{"action":"remove","id":"a"}]}`, "Plan: 1 change"},
		{PatchName, `{"operations":[]}`, "Plan"},
		{PatchName, `{"operations":`, "Plan"},
		{UpdateName, `{"operations":[{"action":"remove","id":"a"}]}`, "Plan"},
	} {
		if got := (planTool{name: tc.name}).Title([]byte(tc.args)); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

// The bounds of update_plan and patch_plan hold at their limits: an id of
// exactly MaxIDBytes and MaxOps operations are taken, an item may repeat
// its operation's id, and adding an id the first step has is refused.
func TestPatchAtItsLimits(t *testing.T) {
	longID := strings.Repeat("i", MaxIDBytes)
	_, err := state{}.replace(updateArgs{Plan: []stepArg{{Step: "x", Status: "sideways", ID: longID}}})
	if err == nil || !strings.Contains(err.Error(), `step 1 (id "`+longID+`")`) {
		t.Errorf("refusal of a step with a %d-byte id: %v", MaxIDBytes, err)
	}

	var ops []opArg
	for i := range MaxOps {
		ops = append(ops, opArg{Action: "add", ID: fmt.Sprintf("s%d", i), Item: &stepArg{Step: "step", Status: "pending"}})
	}
	ops[0].ID, ops[0].Item.ID = longID, longID
	st, err := state{}.patch(patchArgs{Operations: ops})
	if err != nil || len(st.Items) != MaxOps {
		t.Fatalf("%d operations, the first with a %d-byte id repeated by its item: %v", MaxOps, MaxIDBytes, err)
	}
	_, err = st.patch(patchArgs{Operations: []opArg{{Action: "add", ID: longID, Item: &stepArg{Step: "again", Status: "pending"}}}})
	if err == nil || !strings.Contains(err.Error(), "step 1 already has that id") {
		t.Errorf("adding the first step's id again: %v", err)
	}
	_, err = state{}.patch(patchArgs{Operations: []opArg{{Action: "add", ID: "a", Item: &stepArg{Step: "x", Status: "pending", ID: "b"}}}})
	if err == nil || !strings.Contains(err.Error(), `the item's id "b" differs`) {
		t.Errorf("an item whose id differs: %v", err)
	}
}
