package writetodos

import (
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/plan"
)

func pendingTodos(n int) []Todo {
	items := make([]Todo, n)
	for i := range items {
		items[i] = Todo{ID: newID(i), Content: fmt.Sprintf("item %d", i), Status: plan.Pending}
	}
	return items
}

// A list that fits its budget exactly is shown whole; one that does not
// keeps exactly as many items as fit beside the count of the rest, the
// first pending item the last to go, the item in progress never.
func TestCappedAtItsBudget(t *testing.T) {
	items := pendingTodos(9)
	total := 0
	for i, td := range items {
		total += lineLen(i, td)
	}
	if got := renderCapped(items, total); strings.Count(got, "\n")+1 != 9 || strings.Contains(got, "not shown") {
		t.Errorf("exact fit:\n%s", got)
	}

	line := lineLen(0, items[0])
	for _, k := range []int{1, 2, 4} {
		budget := omittedLen(len(items)) + k*line
		if budget >= total {
			t.Fatalf("budget %d for %d items holds the whole list (%d)", budget, k, total)
		}
		var b strings.Builder
		writeCapped(&b, items, budget)
		got := b.String()
		if n := strings.Count(got, "[ ] "); n != k {
			t.Errorf("room for %d items: %d shown:\n%s", k, n, got)
		}
		if !strings.Contains(got, "[ ] 1. item 0") {
			t.Errorf("room for %d items: the first pending item went:\n%s", k, got)
		}
	}

	items[5].Status = plan.InProgress
	var b strings.Builder
	writeCapped(&b, items, omittedLen(len(items))+lineLen(5, items[5]))
	if got := b.String(); strings.Count(got, "[ ] ") != 0 || !strings.Contains(got, "[>] 6. item 5") {
		t.Errorf("room for the item in progress only:\n%s", got)
	}
}

// lineLen is what writeLine writes, for item numbers of one, two and
// three digits.
func TestLineLenAsWritten(t *testing.T) {
	for _, i := range []int{0, 8, 9, 10, 98, 99, 127} {
		td := Todo{ID: newID(i), Content: "do the thing", Status: plan.Pending}
		var b strings.Builder
		writeLine(&b, i, td, true)
		if got := lineLen(i, td); got != b.Len() {
			t.Errorf("lineLen(%d) = %d, writeLine wrote %d: %q", i, got, b.Len(), b.String())
		}
	}
}

// The count of what is left out names only the kinds left out, a second
// item in progress among them.
func TestCappedCountLine(t *testing.T) {
	items := pendingTodos(9)
	items[0].Status, items[1].Status = plan.InProgress, plan.InProgress
	var b strings.Builder
	writeCapped(&b, items, omittedLen(len(items))+lineLen(0, items[0]))
	want := "[>] 1. item 0 (s1)\n… (not shown: 7 pending, 1 in progress)\n"
	if got := b.String(); got != want {
		t.Errorf("capped:\n%s\nwant:\n%s", got, want)
	}
}
