package todo

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"meka.dev/meka/plan"
)

func steps(n int, st plan.Status, f string) []stepArg {
	out := make([]stepArg, n)
	for i := range out {
		out[i] = stepArg{Step: fmt.Sprintf(f, i+1), Status: string(st)}
	}
	return out
}

func TestReminderShape(t *testing.T) {
	got := Reminder([]plan.Item{
		{Text: "read the schema", Status: plan.Completed},
		{Text: "write the query", Status: plan.InProgress},
		{Text: "verify the numbers", Status: plan.Pending},
	}, 187)
	want := `[run plan]
Current plan (your live todo list — keep it updated with update_plan):
[x] (187 earlier steps completed)
[x] read the schema
[~] write the query
[ ] verify the numbers`
	if got != want {
		t.Fatalf("reminder:\n%s\nwant:\n%s", got, want)
	}
	if Reminder(nil, 3) != "" {
		t.Fatal("an empty plan injects something")
	}
}

func TestReminderLabelsAndGlyphs(t *testing.T) {
	got := Reminder([]plan.Item{
		{ID: "q", Text: "query", Status: plan.Blocked, Phase: "build"},
		{ID: "r", Text: "report", Status: plan.Abandoned},
		{Text: "ship", Status: plan.Pending, Phase: "release"},
	}, 0)
	for _, line := range []string{"[!] query (id: q, phase: build)", "[-] report (id: r)", "[ ] ship (phase: release)"} {
		if !strings.Contains(got, "\n"+line) {
			t.Errorf("reminder lacks %q:\n%s", line, got)
		}
	}
}

// Thirty completed steps and one in progress: the store folds all but the
// five most recent completed steps into the count.
func TestReminderThirtyCompletedThenOneInProgress(t *testing.T) {
	args := updateArgs{Plan: append(steps(30, plan.Completed, "completed step %d"), stepArg{Step: "the step in progress", Status: "in_progress"})}
	st, err := state{}.replace(args)
	if err != nil {
		t.Fatal(err)
	}
	if st.Retired != 25 || len(st.Items) != 6 || st.Items[0].Text != "completed step 26" {
		t.Fatalf("stored: retired %d, items %+v", st.Retired, st.Items)
	}
	r := Reminder(st.Items, st.Retired)
	if len(r) > ReminderCap {
		t.Fatalf("reminder is %d bytes", len(r))
	}
	if !strings.Contains(r, "\n[x] (25 earlier steps completed)\n") || !strings.HasSuffix(r, "\n[~] the step in progress") {
		t.Fatalf("reminder:\n%s", r)
	}
	if c := changed(st); c.Completed != 30 || c.Total != 31 || c.Retired != 25 {
		t.Fatalf("changed counts %d/%d retired %d", c.Completed, c.Total, c.Retired)
	}
}

// A plan far over the cap: the step in progress is reserved first and what
// does not fit is counted.
func TestReminderCapsLongPlan(t *testing.T) {
	items := make([]plan.Item, MaxItems)
	for i := range items {
		items[i] = plan.Item{ID: fmt.Sprintf("id-%03d", i), Text: fmt.Sprintf("%03d %s", i, strings.Repeat("é", 80)), Status: plan.Pending, Phase: strings.Repeat("p", 100)}
	}
	items[100].Status = plan.InProgress
	r := Reminder(items, 12345)
	if len(r) > ReminderCap {
		t.Fatalf("reminder is %d bytes", len(r))
	}
	shown := 0
	for _, line := range strings.Split(r, "\n")[3:] {
		if strings.HasPrefix(line, "[") {
			shown++
		}
	}
	want := fmt.Sprintf("\n… (%d further steps in the plan, not shown here)", MaxItems-shown)
	if !strings.Contains(r, "\n[~] 100 ") || !strings.HasSuffix(r, want) || shown < 2 {
		t.Fatalf("shown %d, reminder:\n%s", shown, r)
	}
	// The steps after the one in progress come next, in order.
	if !strings.Contains(r, "\n[ ] 101 ") {
		t.Fatalf("the next step is not shown:\n%s", r)
	}
}

func TestClampOnRuneBoundary(t *testing.T) {
	s := strings.Repeat("a", 159) + "é" // 161 bytes, é straddles 160
	if got := plan.Clamp(s, MaxStepBytes); got != strings.Repeat("a", 159) {
		t.Fatalf("clamp %q", got)
	}
}

// FuzzReminder builds random plans from the input and checks the bound:
// the reminder never passes ReminderCap, is valid UTF-8 when the plan is,
// always shows the step in progress, and accounts for every step.
func FuzzReminder(f *testing.F) {
	f.Add([]byte("\x05\x01\x02\x03"), 0, "write the query")
	f.Add([]byte(strings.Repeat("\xff\x80\x10", 200)), 187, strings.Repeat("long ", 60))
	f.Add([]byte{}, 1, "")
	f.Fuzz(func(t *testing.T, shape []byte, retired int, text string) {
		if retired < 0 {
			retired = -retired
		}
		if retired < 0 {
			retired = 0
		}
		text = plan.OneLine(text) // the store keeps every step on one line
		var items []plan.Item
		statuses := []plan.Status{plan.Pending, plan.InProgress, plan.Completed, plan.Blocked, plan.Abandoned}
		active := -1
		for i := 0; i+1 < len(shape) && len(items) < 4*MaxItems; i += 2 {
			b, n := shape[i], int(shape[i+1])
			st := statuses[int(b)%len(statuses)]
			if st == plan.InProgress {
				if active >= 0 {
					st = plan.Pending
				} else {
					active = len(items)
				}
			}
			rep := strings.Repeat(text, 1+n%7)
			items = append(items, plan.Item{ID: strings.Repeat("i", n%80), Text: fmt.Sprintf("%d %s", i, rep),
				Status: st, Phase: strings.Repeat("φ", n%120)})
		}
		r := Reminder(items, retired)
		if len(items) == 0 {
			if r != "" {
				t.Fatal("empty plan rendered")
			}
			return
		}
		if len(r) > ReminderCap {
			t.Fatalf("reminder is %d bytes over %d items", len(r), len(items))
		}
		if utf8.ValidString(text) && !utf8.ValidString(r) {
			t.Fatal("reminder is not valid UTF-8")
		}
		if active >= 0 {
			var b strings.Builder
			writeLine(&b, items[active])
			if !strings.Contains(r, "\n"+strings.TrimSuffix(b.String(), "\n")) {
				t.Fatalf("the step in progress is missing:\n%s", r)
			}
		}
		shown := strings.Count(r, "\n[") - btoi(retired > 0)
		left := 0
		if i := strings.LastIndex(r, "\n… ("); i >= 0 {
			fmt.Sscanf(r[i+len("\n… ("):], "%d", &left)
		}
		if shown+left != len(items) {
			t.Fatalf("%d shown + %d counted != %d steps", shown, left, len(items))
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func BenchmarkReminder128(b *testing.B) {
	items := make([]plan.Item, MaxItems)
	for i := range items {
		items[i] = plan.Item{ID: fmt.Sprintf("s%d", i), Text: strings.Repeat("x", 120), Status: plan.Pending, Phase: "phase"}
	}
	items[64].Status = plan.InProgress
	b.ReportAllocs()
	for b.Loop() {
		if len(Reminder(items, 500)) > ReminderCap {
			b.Fatal("over the cap")
		}
	}
}
