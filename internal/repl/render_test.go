package repl

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name.golden.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

var widths = []int{20, 40, 80, 120}

// atWidths renders one component at every width, checking that no line
// is wider than asked.
func atWidths(t *testing.T, render func(width int) []string) string {
	t.Helper()
	var b strings.Builder
	for _, w := range widths {
		fmt.Fprintf(&b, "-- width %d --\n", w)
		for _, l := range render(w) {
			if lw := ansi.StringWidth(l); lw > w {
				t.Errorf("width %d: line %q is %d wide", w, l, lw)
			}
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func TestRenderDirections(t *testing.T) {
	st := styles{}
	notices := []session.Notice{
		{Severity: session.SeverityInfo, Title: "Checklist: 1 open item, continuing, nudge 1 of 3"},
		{Severity: session.SeverityWarning, Title: "Checklist: turn ended with 2 open items after 9 nudges this turn"},
		{Severity: session.SeverityInfo, Title: "Background task 7f3a1c22 finished after 12m 4s", Description: "go test ./... -count=50"},
		{Severity: session.SeverityWarning, Title: "Scheduled job 7f3a1b2c failed", Description: "the provider answered 529 overloaded"},
		{Title: "file_write allowed"},
	}
	golden(t, "directions", atWidths(t, func(w int) []string {
		var out []string
		for _, n := range notices {
			out = append(out, direction(st, n, w)...)
		}
		return out
	}))
}

func TestRenderToolCards(t *testing.T) {
	st := styles{}
	var long strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&long, "ok   meka/pkg%02d   0.%02ds\n", i, i)
	}
	cards := []card{
		{name: "shell_execute", title: "go test ./...", status: session.StatusOK, took: 2100 * time.Millisecond, output: long.String()},
		{name: "file_edit", title: "file_edit internal/repl/render.go", status: session.StatusOK, took: 12 * time.Millisecond,
			change: "--- a/render.go\n+++ b/render.go\n@@ -1,3 +1,3 @@\n package repl\n-var x = 1\n+var x = 2\n"},
		{name: "shell_execute", title: "rm -rf build", status: session.StatusRefused},
		{name: "shell_execute", title: "go build ./...", status: session.StatusError, took: 3 * time.Second, output: "main.go:3:1: syntax error"},
	}
	golden(t, "toolcards", atWidths(t, func(w int) []string {
		var out []string
		for _, c := range cards {
			out = append(out, c.finished(st, w)...)
		}
		running := card{name: "shell_execute", title: "go build ./...", took: 12 * time.Second, output: long.String()}
		return append(out, running.running(st, w)...)
	}))
}

func testPlan() plan.Changed {
	return plan.Changed{Dialect: "checklist", Total: 5, Completed: 2, Items: []plan.Item{
		{Text: "read the spec", Status: plan.Completed},
		{Text: "write the query", Status: plan.InProgress},
		{Text: "verify the numbers against last quarter's report", Status: plan.Pending},
		{Text: "ask Ana", Status: plan.Deferred, Reason: "waiting on her reply"},
	}}
}

func TestRenderPlan(t *testing.T) {
	st := styles{}
	todos := plan.Changed{Dialect: "write_todos", Total: 3, Completed: 1, Items: []plan.Item{
		{Text: "Write tests", ActiveForm: "Writing tests", Status: plan.InProgress},
		{Text: "Fix the bug", ActiveForm: "Fixing the bug", Status: plan.Pending},
		{Text: "Read the code", Status: plan.Completed},
	}}
	golden(t, "plan", atWidths(t, func(w int) []string {
		out := planBlock(st, testPlan(), w, false)
		out = append(out, planBlock(st, todos, w, false)...)
		out = append(out, "/plan:")
		return append(out, planFull(st, testPlan(), w)...)
	}))
}

func TestRenderApproval(t *testing.T) {
	st := styles{}
	a := &approval{tool: "shell_execute", title: "shell_execute go test ./... -run TestScreen", args: "go test ./... -run TestScreen", choice: 0}
	golden(t, "approval", atWidths(t, func(w int) []string {
		out := approvalPane(st, a, w, 400*time.Millisecond)
		return append(out, approvalPane(st, a, w, 0)...)
	}))
}

func TestRenderStatusLine(t *testing.T) {
	st := styles{}
	golden(t, "status", atWidths(t, func(w int) []string {
		return []string{
			statusLine(st, status{level: "workspace", profile: "opus", ctxPercent: 41}, w),
			statusLine(st, status{level: "read", profile: "opus", ctxPercent: -1, busy: true, elapsed: 12 * time.Second, note: "draft saved — returns after this turn"}, w),
			statusLine(st, status{level: "workspace", profile: "opus", ctxPercent: 3, quitArmed: true, quitKey: "ctrl+c"}, w),
			statusLine(st, status{level: "workspace", profile: "opus", ctxPercent: 12, cost: 0.4213}, w),
			statusLine(st, status{level: "workspace", profile: "opus", ctxPercent: 12, cost: 12.5}, w),
		}
	}))
}

func TestRenderStatusBlock(t *testing.T) {
	f := newFake()
	f.rows = []session.Row{{Turn: 1, Entry: session.AssistantMessage{}}}
	golden(t, "statusblock", strings.Join(statusBlock(f), "\n")+"\n")
}

// /schedule's table: Held is yes when the job cannot fire, blank when it
// will, ? when this process cannot tell.
func TestRenderScheduleTable(t *testing.T) {
	now := time.Date(2026, 8, 11, 15, 0, 0, 0, time.UTC)
	gate, _ := json.Marshal(map[string]any{"check": map[string]any{"command": "test -f done"}, "when": "succeeded"})
	jobs := []schedule.Job{
		{ID: "7f3a1b2c9d", Kind: schedule.KindOnce, NextAt: now.Add(20 * time.Minute), Zone: "UTC", Prompt: "check the deploy"},
		{ID: "7f3a99e0aa", Kind: schedule.KindEvery, Spec: "30m", NextAt: now.Add(12 * time.Minute), Zone: "UTC", Prompt: "look at the queue\nand say what is stuck", Gate: string(gate)},
		{ID: "a0b1c2d3e4", Kind: schedule.KindCron, Spec: "0 9 * * 1-5", NextAt: now.Add(18 * time.Hour), Zone: "UTC", Prompt: "morning summary", Held: "parked by the user"},
	}
	held := map[string]string{"7f3a1b2c9d": "", "7f3a99e0aa": "?", "a0b1c2d3e4": "yes"}
	golden(t, "schedule", atWidths(t, func(w int) []string {
		return jobTable(jobs, func(j schedule.Job) string { return held[j.ID] }, now, w)
	}))
}

// One golden in colour: the styles are SGR sequences, and every state
// still has its glyph or word.
func TestRenderANSI(t *testing.T) {
	st := styles{color: true}
	var out []string
	out = append(out, direction(st, session.Notice{Severity: session.SeverityWarning, Title: "Checklist: 2 open items left"}, 80)...)
	out = append(out, card{name: "x", title: "go vet", status: session.StatusOK, took: time.Second}.finished(st, 80)...)
	out = append(out, planBlock(st, testPlan(), 80, false)...)
	golden(t, "ansi", strings.Join(out, "\n")+"\n")
}

func TestUserLines(t *testing.T) {
	got := userLines("remind me in 20 minutes to check the deploy\nsecond line", 24)
	want := []string{"> remind me in 20", "  minutes to check the", "  deploy", "  second line"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q", got)
	}
}
