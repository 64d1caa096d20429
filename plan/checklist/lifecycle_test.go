package checklist_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
)

func TestResumedSessionStillOwesItsItems(t *testing.T) {
	h := newHarness(t,
		calls(add("a", "One", "Two"), edit("e", map[string]string{"id": "c1", "status": "completed"})),
		say("bye"),
	)
	h.engine(setup{noNudge: true}).run(t, userText("go"))

	// A new engine over the same rows, as after a restart.
	h.play(
		say("back"),
		calls(add("a2", "Three"), edit("e2", map[string]string{"id": "c2", "status": "completed"}), edit("e3", map[string]string{"id": "c3", "status": "completed"})),
		say("done"),
	)
	s := h.engine(setup{})
	if got := ids(s.p.Items()); got != "c2:pending:Two" {
		t.Fatalf("resumed items: %s", got)
	}
	res := s.run(t, userText("continue"))
	if res.Stop != agent.StopEndTurn || res.Reply != "done" {
		t.Fatalf("turn: %+v", res)
	}
	if n := notices(turnRows(h.rows(), 2)); len(n) != 1 || n[0].Title != "Checklist: 1 open item, continuing, nudge 1 of 3" {
		t.Fatalf("resumed turn notices: %+v", n)
	}
	if got := text(results(h.rows())["a2"].Content); !strings.HasPrefix(got, "Added c3.") {
		t.Fatalf("id after resume (c1 was completed, not freed): %q", got)
	}
	// Replay announced nothing: the only change is the live one.
	ch := changes(s.events.take())
	if len(ch) != 1 || len(ch[0].Items) != 0 || ch[0].Completed != 3 || ch[0].Total != 3 {
		t.Fatalf("changes: %+v", ch)
	}
}

func TestRewindDropsTheTurnsItems(t *testing.T) {
	h := newHarness(t,
		calls(add("a", "Kept")), say("one"),
		calls(add("b", "Dropped", "Also dropped")), say("two"),
	)
	s := h.engine(setup{noNudge: true})
	s.run(t, userText("first"))
	s.run(t, userText("second"))
	if got := ids(s.p.Items()); got != "c1:pending:Kept c2:pending:Dropped c3:pending:Also dropped" {
		t.Fatalf("before rewind: %s", got)
	}
	if err := h.store.Rewind(t.Context(), h.id, 1); err != nil {
		t.Fatal(err)
	}
	h.play(calls(add("c", "Instead")), say("three"))
	s = h.engine(setup{noNudge: true})
	if got := ids(s.p.Items()); got != "c1:pending:Kept" {
		t.Fatalf("after rewind: %s", got)
	}
	s.run(t, userText("second, again"))
	// The rows that assigned c2 and c3 are gone, so c2 is free again.
	if got := ids(s.p.Items()); got != "c1:pending:Kept c2:pending:Instead" {
		t.Fatalf("after a new add: %s", got)
	}
}

func TestForkCarriesTheList(t *testing.T) {
	tk := newTasks("t1")
	h := newHarness(t,
		calls(add("a", "Done soon", "Waits on a task"),
			edit("e1", map[string]string{"id": "c1", "status": "completed"}),
			edit("e2", map[string]string{"id": "c2", "status": "deferred", "reason": "the test suite runs", "task": "t1"})),
		say("waiting"),
	)
	h.engine(setup{tasks: tk}).run(t, userText("go"))

	forked, err := h.store.Fork(t.Context(), h.id, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Background tasks do not travel: the fork has none.
	fh := &harness{t: t, store: h.store, id: forked.ID}
	fh.play(say("in the fork"))
	s := fh.engine(setup{})
	const want = "c2:deferred:Waits on a task:the test suite runs:t1"
	if got := ids(s.p.Items()); got != want {
		t.Fatalf("forked items: %s", got)
	}
	res := s.run(t, userText("hello"))
	if res.Stop != agent.StopEndTurn || res.Rounds != 1 || len(notices(fh.rows())) != 0 {
		t.Fatalf("fork turn: %+v notices %+v", res, notices(fh.rows()))
	}
	if got := ids(s.p.Items()); got != want {
		t.Fatalf("forked items after a turn: %s", got)
	}
}

func TestCompactionRecordsTheList(t *testing.T) {
	h := newHarness(t,
		calls(add("a", "Parse", "Check", "Ask Ana"),
			edit("e1", map[string]string{"id": "c1", "status": "completed"}),
			edit("e2", map[string]string{"id": "c3", "status": "deferred", "reason": "Ana answers the question"})),
		say("one"),
		say("two"),
		say("The user wants a parser; it is written."),
	)
	s := h.engine(setup{noNudge: true})
	s.run(t, userText("first"))
	s.run(t, userText("second"))
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := h.rows()
	i := session.LatestCompaction(rows)
	if i < 0 {
		t.Fatal("no compaction row")
	}
	c := rows[i].Entry.(session.Compaction)
	wantText := checklist.CompactionHeading + "\n- c2 [pending] Check\n- c3 [deferred: Ana answers the question] Ask Ana"
	if !strings.HasSuffix(c.Summary, "\n\n"+wantText) || !strings.HasPrefix(c.Summary, "The user wants a parser") {
		t.Fatalf("summary:\n%s", c.Summary)
	}
	var cp struct {
		Items []plan.Item
		Added int
	}
	if err := json.Unmarshal(c.Checkpoint[checklist.FoldName], &cp); err != nil || cp.Added != 3 || len(cp.Items) != 2 {
		t.Fatalf("checkpoint %s (%v)", c.Checkpoint[checklist.FoldName], err)
	}

	// A session resumed from the boundary starts from the list as it
	// stood, and its counter goes on from there.
	h.play(calls(add("b", "Four")), say("three"))
	s = h.engine(setup{noNudge: true})
	if got := ids(s.p.Items()); got != "c2:pending:Check c3:deferred:Ask Ana:Ana answers the question:" {
		t.Fatalf("after compaction: %s", got)
	}
	s.run(t, userText("third"))
	if got := ids(s.p.Items()); !strings.HasSuffix(got, "c4:pending:Four") {
		t.Fatalf("after an add: %s", got)
	}
}

func TestReplayStartsFromTheCheckpoint(t *testing.T) {
	// The boundary's checkpoint is the whole truth about the rows before
	// it: an add before it that the checkpoint does not hold is not
	// replayed.
	before := []session.Row{
		{Seq: 1, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: "x", Name: "checklist_add", Arguments: json.RawMessage(`{"items":["Lost"]}`)}}}},
		{Seq: 2, Turn: 1, Entry: session.ToolResult{CallID: "x", Name: "checklist_add", Status: session.StatusOK}},
		{Seq: 3, Turn: 1, Entry: session.Compaction{Summary: "s", KeptFrom: 3, Checkpoint: map[string]json.RawMessage{
			checklist.FoldName: json.RawMessage(`{"items":[{"id":"c7","text":"Kept","status":"in_progress"}],"added":7}`)}}},
		{Seq: 4, Turn: 2, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: "y", Name: "checklist_add", Arguments: json.RawMessage(`{"items":["New"]}`)}}}},
		{Seq: 5, Turn: 2, Entry: session.ToolResult{CallID: "y", Name: "checklist_add", Status: session.StatusOK}},
	}
	p := checklist.New(checklist.Options{})
	if err := session.NewFolder(p.Fold()).Replay(before); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Items()); got != "c7:in_progress:Kept c8:pending:New" {
		t.Fatalf("items: %s", got)
	}
}
