package checklist_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

func TestRefusalsChangeNothing(t *testing.T) {
	tk := newTasks("t1", "t3")
	tk.report("t2")
	h := newHarness(t,
		calls(add("a", "Write the report", "Send it"),
			edit("d", map[string]string{"id": "c2", "status": "deferred", "reason": "waiting for the build", "task": "t1"})),
		calls(
			edit("unknown", map[string]string{"id": "c9", "status": "completed"}),
			edit("cancel-no-reason", map[string]string{"id": "c1", "status": "canceled"}),
			edit("defer-no-reason", map[string]string{"id": "c1", "status": "deferred"}),
			edit("no-such-task", map[string]string{"id": "c1", "status": "deferred", "reason": "build", "task": "t404"}),
			edit("reported-task", map[string]string{"id": "c1", "status": "deferred", "reason": "build", "task": "t2"}),
			edit("task-not-deferred", map[string]string{"id": "c1", "status": "in_progress", "task": "t3"}),
			edit("nothing", map[string]string{"id": "c1"}),
			call("no-items", "checklist_add", `{"items":[]}`),
			add("blank", "  "),
		),
		say("turn 1 ends"),
		// Turn 2, after t1 reported without a marker reaching the fold.
		calls(
			edit("keeps-reported", map[string]string{"id": "c2", "status": "deferred"}),
			edit("new-reason", map[string]string{"id": "c2", "status": "deferred", "reason": "the user's answer"}),
			edit("new-task", map[string]string{"id": "c2", "task": "t3"}),
			edit("neither", map[string]string{"id": "c2", "status": "deferred"}),
		),
		say("turn 2 ends"),
	)
	s := h.engine(setup{tasks: tk, noNudge: true})
	s.run(t, userText("go"))

	const list = "The checklist:\n- c1 [pending] Write the report\n- c2 [deferred: waiting for the build; waits on background task t1] Send it"
	rs := results(h.rows())
	for id, why := range map[string]string{
		"unknown":           `there is no item "c9" on the checklist; the ids on it are c1, c2`,
		"cancel-no-reason":  "canceling c1 needs a reason",
		"defer-no-reason":   "deferring c1 needs a reason",
		"no-such-task":      `there is no background task "t404"`,
		"reported-task":     "background task t2 has already reported",
		"task-not-deferred": "a task is what a deferred item waits on; it cannot go with status in_progress",
		"nothing":           "give c1 a status, a reason, a task or a text",
		"no-items":          "give at least one item",
		"blank":             "item 1 has no text",
	} {
		tr := rs[id]
		got := text(tr.Content)
		if tr.Status != session.StatusError || !strings.Contains(got, "refused, nothing changed: "+why) || !strings.HasSuffix(got, "\n\n"+list) {
			t.Errorf("%s: status %s\n%s", id, tr.Status, got)
		}
		var st struct{ Items []plan.Item }
		if err := json.Unmarshal(tr.State, &st); err != nil || len(st.Items) != 2 {
			t.Errorf("%s: state %s (%v)", id, tr.State, err)
		}
	}
	ch := changes(s.events.take())
	if len(ch) != 1 {
		t.Fatalf("%d changes in turn 1, want 1 (the refusals change nothing): %+v", len(ch), ch)
	}
	if got := ids(s.p.Items()); got != "c1:pending:Write the report c2:deferred:Send it:waiting for the build:t1" {
		t.Fatalf("items after the refusals: %s", got)
	}

	tk.report("t1")
	s.run(t, userText("and now?"))
	rs = results(h.rows())
	if tr := rs["keeps-reported"]; tr.Status != session.StatusError || !strings.Contains(text(tr.Content), "would keep background task t1, which has already reported") ||
		!strings.HasSuffix(text(tr.Content), list) {
		t.Fatalf("re-deferral keeping a reported task: %+v", tr)
	}
	steps := []struct{ id, want string }{
		{"new-reason", "- c2 [deferred: the user's answer] Send it"},
		{"new-task", "- c2 [deferred: the user's answer; waits on background task t3] Send it"},
		{"neither", "- c2 [deferred: the user's answer; waits on background task t3] Send it"},
	}
	for _, st := range steps {
		if tr := rs[st.id]; tr.Status != session.StatusOK || !strings.Contains(text(tr.Content), st.want) {
			t.Fatalf("%s: %+v", st.id, tr)
		}
	}
	if got := ids(s.p.Items()); got != "c1:pending:Write the report c2:deferred:Send it:the user's answer:t3" {
		t.Fatalf("items: %s", got)
	}
}
