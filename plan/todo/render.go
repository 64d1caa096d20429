package todo

import (
	"strconv"
	"strings"

	"meka.dev/meka/plan"
)

// ReminderCap bounds the reminder in bytes, whatever the plan's size: it
// is pinned into every request, so it must not grow with the run.
const ReminderCap = 2048

// replyCap bounds the plan a tool result shows. Results stay in the
// history, so they are bounded too, more loosely than the reminder.
const replyCap = 8192

// ReminderHeader opens the reminder.
const ReminderHeader = "[run plan]\nCurrent plan (your live todo list — keep it updated with update_plan):\n"

// Glyph is a step's mark in the reminder and in results: [x] completed,
// [~] in progress, [ ] pending, [!] blocked (waiting on something outside
// the agent's reach), [-] abandoned (deliberately not done).
func Glyph(s plan.Status) string {
	switch s {
	case plan.Completed:
		return "[x]"
	case plan.InProgress:
		return "[~]"
	case plan.Blocked:
		return "[!]"
	case plan.Abandoned:
		return "[-]"
	}
	return "[ ]"
}

// Reminder renders the plan as the model sees it before every request,
// at most ReminderCap bytes; "" for an empty plan.
func Reminder(items []plan.Item, retired int) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(ReminderCap)
	b.WriteString(ReminderHeader)
	writeBody(&b, items, retired, ReminderCap-len(ReminderHeader))
	return strings.TrimSuffix(b.String(), "\n")
}

// renderPlan renders the plan for a tool result, within limit bytes.
func renderPlan(st state, limit int) string {
	if len(st.Items) == 0 && st.Retired == 0 {
		return "(the plan is empty)"
	}
	var b strings.Builder
	writeBody(&b, st.Items, st.Retired, limit)
	return strings.TrimSuffix(b.String(), "\n")
}

// writeBody writes the retired count and as many steps as fit in budget
// bytes, newline-terminated. When not all fit, the step in progress is
// reserved first, then the steps after it in order, then those before it,
// nearest first; the steps left out are counted on a last line rather than
// silently dropped. Every line is bounded (see writeLine), so the step in
// progress always fits a budget of ReminderCap.
func writeBody(b *strings.Builder, items []plan.Item, retired, budget int) {
	if retired > 0 {
		n := b.Len()
		b.WriteString("[x] (")
		b.WriteString(strconv.Itoa(retired))
		b.WriteString(plan.Plural(retired, " earlier step completed)\n", " earlier steps completed)\n"))
		budget -= b.Len() - n
	}
	var small [MaxItems]int
	lens := small[:0]
	if len(items) > MaxItems {
		lens = make([]int, 0, len(items))
	}
	total := 0
	for _, it := range items {
		n := lineLen(it)
		lens = append(lens, n)
		total += n
	}
	if total <= budget {
		for _, it := range items {
			writeLine(b, it)
		}
		return
	}
	// Room for the count of what is left out, with as many digits as the
	// largest count could take.
	avail := budget - furtherLen(len(items))
	var smallShown [MaxItems]bool
	shown := smallShown[:0]
	if len(items) > MaxItems {
		shown = make([]bool, len(items))
	} else {
		shown = smallShown[:len(items)]
	}
	count := 0
	take := func(i int) {
		if lens[i] <= avail {
			shown[i] = true
			avail -= lens[i]
			count++
		}
	}
	a := anchor(items)
	for i := a; i < len(items); i++ {
		take(i)
	}
	for i := a - 1; i >= 0; i-- {
		take(i)
	}
	for i, it := range items {
		if shown[i] {
			writeLine(b, it)
		}
	}
	if left := len(items) - count; left > 0 {
		b.WriteString("… (")
		b.WriteString(strconv.Itoa(left))
		b.WriteString(plan.Plural(left, " further step in the plan, not shown here)\n", " further steps in the plan, not shown here)\n"))
	}
}

// anchor is where the reader's attention is: the step in progress, else
// the first open one, else the first.
func anchor(items []plan.Item) int {
	first := -1
	for i, it := range items {
		if it.Status == plan.InProgress {
			return i
		}
		if first < 0 && it.Status == plan.Pending {
			first = i
		}
	}
	return max(first, 0)
}

// furtherLen is the length of the line counting n left-out steps, an
// upper bound for any smaller count.
func furtherLen(n int) int {
	return len("… ( further steps in the plan, not shown here)\n") + len(strconv.Itoa(n))
}

// The fields of a line are clamped again as they are written, so a plan
// restored from an arbitrary checkpoint still renders within bounds.
func lineLen(it plan.Item) int {
	n := len("[ ] ") + len(plan.Clamp(it.Text, MaxStepBytes)) + 1
	id, phase := plan.Clamp(it.ID, MaxIDBytes), plan.Clamp(it.Phase, MaxPhaseBytes)
	switch {
	case id != "" && phase != "":
		n += len(" (id: , phase: )") + len(id) + len(phase)
	case id != "":
		n += len(" (id: )") + len(id)
	case phase != "":
		n += len(" (phase: )") + len(phase)
	}
	return n
}

func writeLine(b *strings.Builder, it plan.Item) {
	b.WriteString(Glyph(it.Status))
	b.WriteByte(' ')
	b.WriteString(plan.Clamp(it.Text, MaxStepBytes))
	id, phase := plan.Clamp(it.ID, MaxIDBytes), plan.Clamp(it.Phase, MaxPhaseBytes)
	switch {
	case id != "" && phase != "":
		b.WriteString(" (id: ")
		b.WriteString(id)
		b.WriteString(", phase: ")
		b.WriteString(phase)
		b.WriteByte(')')
	case id != "":
		b.WriteString(" (id: ")
		b.WriteString(id)
		b.WriteByte(')')
	case phase != "":
		b.WriteString(" (phase: ")
		b.WriteString(phase)
		b.WriteByte(')')
	}
	b.WriteByte('\n')
}
