package writetodos

import (
	"strconv"
	"strings"

	"meka.dev/meka/plan"
)

// Caps on rendered lists, in bytes.
const (
	// ContextCap bounds the list every request carries, instruction
	// included.
	ContextCap = 2048
	// errorCap bounds the list a refusal appends.
	errorCap = 2000
	// replyCap bounds the list a successful call returns; results stay in
	// the history.
	replyCap = 8192
	// lineContentCap and lineIDCap are where a capped render cuts an
	// item's content and ID, so the item in progress always fits.
	lineContentCap = 200
	lineIDCap      = 32
)

// ContextHeader opens the list in a request.
const ContextHeader = "[todo list]\nYour write_todos list ([x] completed, [>] in_progress, [ ] pending, [-] cancelled; IDs in parentheses):\n"

// Instruction closes the list in every request.
const Instruction = "Before your final reply, use write_todos to mark work actually completed as completed. Leave unfinished work pending or in_progress; do not mark it completed without evidence."

// Mark is an item's mark: [x] completed, [>] in progress, [ ] pending,
// [-] cancelled.
func Mark(s plan.Status) string {
	switch s {
	case plan.Completed:
		return "[x]"
	case plan.InProgress:
		return "[>]"
	case plan.Cancelled:
		return "[-]"
	}
	return "[ ]"
}

// Render renders a list one item a line: "[x] 1. Research the endpoint
// (s1)".
func Render(items []Todo) string {
	var b strings.Builder
	for i, t := range items {
		writeLine(&b, i, t, false)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Context renders the list as every request carries it, at most
// ContextCap bytes; "" for an empty list.
func Context(items []Todo) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(ContextCap)
	b.WriteString(ContextHeader)
	writeCapped(&b, items, ContextCap-len(ContextHeader)-len(Instruction))
	b.WriteString(Instruction)
	return b.String()
}

// renderCapped renders the list within limit bytes.
func renderCapped(items []Todo, limit int) string {
	if len(items) == 0 {
		return "(the list is empty)"
	}
	var b strings.Builder
	writeCapped(&b, items, limit)
	return strings.TrimSuffix(b.String(), "\n")
}

// writeCapped writes as many items as fit in budget bytes, newline
// terminated. When not all fit, completed items are folded first (oldest
// first), then cancelled ones, then pending ones from the end; the first
// item in progress is always shown. What is left out is counted on a
// last line.
func writeCapped(b *strings.Builder, items []Todo, budget int) {
	var small [MaxItems]int
	lens := small[:0]
	total := 0
	for i, t := range items {
		n := lineLen(i, t)
		lens = append(lens, n)
		total += n
	}
	if total <= budget {
		for i, t := range items {
			writeLine(b, i, t, true)
		}
		return
	}
	var smallHidden [MaxItems]bool
	hidden := smallHidden[:0]
	if len(items) > MaxItems {
		hidden = make([]bool, len(items))
	} else {
		hidden = smallHidden[:len(items)]
	}
	avail := budget - omittedLen(len(items))
	hide := func(i int) {
		if total > avail && !hidden[i] {
			hidden[i] = true
			total -= lens[i]
		}
	}
	for _, st := range []plan.Status{plan.Completed, plan.Cancelled} {
		for i, t := range items {
			if t.Status == st {
				hide(i)
			}
		}
	}
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Status == plan.Pending {
			hide(i)
		}
	}
	first := true
	for i := range items {
		if items[i].Status == plan.InProgress {
			if first {
				first = false
				continue
			}
			hide(i)
		}
	}
	var counts [4]int // completed, cancelled, pending, in progress
	for i, t := range items {
		if !hidden[i] {
			writeLine(b, i, t, true)
			continue
		}
		switch t.Status {
		case plan.Completed:
			counts[0]++
		case plan.Cancelled:
			counts[1]++
		case plan.InProgress:
			counts[3]++
		default:
			counts[2]++
		}
	}
	if counts == [4]int{} {
		return
	}
	b.WriteString("… (not shown:")
	sep := " "
	for k, name := range [4]string{"completed", "cancelled", "pending", "in progress"} {
		if counts[k] > 0 {
			b.WriteString(sep)
			b.WriteString(strconv.Itoa(counts[k]))
			b.WriteByte(' ')
			b.WriteString(name)
			sep = ", "
		}
	}
	b.WriteString(")\n")
}

// omittedLen bounds the length of the line counting left-out items.
func omittedLen(n int) int {
	return len("… (not shown: completed, cancelled, pending, in progress)\n") + 4*(len(strconv.Itoa(n))+1)
}

func lineLen(i int, t Todo) int {
	return len("[ ] . ") + digits(i+1) + len(plan.Clamp(t.Content, lineContentCap)) + len(" ()\n") + len(plan.Clamp(t.ID, lineIDCap))
}

func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

func writeLine(b *strings.Builder, i int, t Todo, capped bool) {
	content, id := t.Content, t.ID
	if capped {
		content, id = plan.Clamp(content, lineContentCap), plan.Clamp(id, lineIDCap)
	}
	b.WriteString(Mark(t.Status))
	b.WriteByte(' ')
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], int64(i+1), 10))
	b.WriteString(". ")
	b.WriteString(content)
	b.WriteString(" (")
	b.WriteString(id)
	b.WriteString(")\n")
}
