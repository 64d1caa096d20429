package writetodos

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"meka.dev/meka/plan"
)

// Sessions written before results recorded the list (ToolResult.State)
// are rebuilt from what they do hold, as closely as it allows:
//
//  1. the call's arguments, replayed under the rules of the time, which
//     let a resubmitted list change statuses position by position;
//  2. failing that (the call is missing from the log, or its arguments do
//     not apply), the rendered list in the result text, parsed back into
//     items.
//
// Items get the time of the result's row as their timestamps.

// legacyApply replays a call of the old format: updates, when present,
// set fields by ID and nothing else; otherwise todos is the whole list,
// existing items keeping their content and position, followed by new
// ones.
func (cur state) legacyApply(a writeArgs, at time.Time) (state, bool) {
	next := state{Items: append([]Todo(nil), cur.Items...)}
	if len(a.Updates) > 0 {
		for _, u := range a.Updates {
			j := next.find(u.ID)
			if j < 0 {
				return cur, false
			}
			td := &next.Items[j]
			if u.Content != nil && strings.TrimSpace(*u.Content) != "" {
				td.Content = strings.TrimSpace(*u.Content)
			}
			if u.ActiveForm != nil {
				td.ActiveForm = strings.TrimSpace(*u.ActiveForm)
			}
			if u.Status != nil {
				st, ok := parseStatus(*u.Status)
				if !ok {
					return cur, false
				}
				td.setStatus(st, at)
			}
		}
		return next, true
	}
	if len(a.Todos) == 0 || len(a.Todos) < len(cur.Items) {
		return cur, false
	}
	for i, t := range a.Todos {
		content := strings.TrimSpace(t.Content)
		st, ok := parseStatus(t.Status)
		if !ok || content == "" {
			return cur, false
		}
		if i < len(cur.Items) {
			td := &next.Items[i]
			if td.Content != content || (t.ID != "" && t.ID != td.ID) {
				return cur, false
			}
			if t.ActiveForm != nil {
				td.ActiveForm = strings.TrimSpace(*t.ActiveForm)
			}
			td.setStatus(st, at)
			continue
		}
		td := Todo{ID: newID(i), Content: content, At: at}
		if t.ActiveForm != nil {
			td.ActiveForm = strings.TrimSpace(*t.ActiveForm)
		}
		td.setStatus(st, at)
		next.Items = append(next.Items, td)
	}
	return next, true
}

// renderedLine matches a line of Render: "[x] 1. Research the endpoint
// (s1)". Compiled at first use: most runs never read a list back, and
// every run would pay for it at start-up.
var renderedLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[([ x>\-])\] (\d+)\. (.+) \((s\d+)\)$`)
})

var markStatus = map[string]plan.Status{" ": plan.Pending, ">": plan.InProgress, "x": plan.Completed, "-": plan.Cancelled}

// parseRendered reads a rendered list back into items: each recognized
// line replaces the item with its ID or, for a new ID, is appended. It
// reports false when the text holds no such line. Lines a capped render
// left out leave their items as they were.
func (cur state) parseRendered(text string, at time.Time) (state, bool) {
	next := state{Items: append([]Todo(nil), cur.Items...)}
	found := false
	for _, line := range strings.Split(text, "\n") {
		m := renderedLine().FindStringSubmatch(strings.TrimRight(line, " \r"))
		if m == nil {
			continue
		}
		if _, err := strconv.Atoi(m[2]); err != nil {
			continue
		}
		found = true
		st, content, id := markStatus[m[1]], m[3], m[4]
		if j := next.find(id); j >= 0 {
			next.Items[j].Content = content
			next.Items[j].setStatus(st, at)
			continue
		}
		td := Todo{ID: id, Content: content, At: at}
		td.setStatus(st, at)
		next.Items = append(next.Items, td)
	}
	return next, found
}
