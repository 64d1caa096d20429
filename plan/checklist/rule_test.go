package checklist_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

func TestNudgedThreeTimesThenTurnEnds(t *testing.T) {
	h := newHarness(t,
		// Turn 1: two items, then four replies without a tool call.
		calls(add("a1", "Write the parser", "Add tests")),
		say("All done."), say("Done, really."), say("Nothing left."), say("Stopping."),
		// Turn 2: asked again at its end; this time the items get done.
		say("Hello again."),
		calls(edit("e1", map[string]string{"id": "c1", "status": "completed"}), edit("e2", map[string]string{"id": "c2", "status": "completed"})),
		say("Both finished."),
	)
	s := h.engine(setup{})
	res := s.run(t, userText("build it"))
	// Reaching the cap with items open is not a finished turn.
	if res.Stop != plan.StopIncomplete || res.Rounds != 5 || res.Reply != "Stopping." {
		t.Fatalf("turn 1: %+v", res)
	}
	if got := len(h.prov.Requests()) - 1; got != 4 {
		t.Fatalf("%d requests after the add, want 4", got)
	}
	rows := turnRows(h.rows(), 1)
	rem := reminders(rows)
	if len(rem) != 3 {
		t.Fatalf("%d nudges, want 3: %q", len(rem), rem)
	}
	for i, r := range rem {
		for _, want := range []string{"2 open items", "- c1 [pending] Write the parser", "- c2 [pending] Add tests",
			"complete it", "cancel it", "defer it", "never for one that is hard"} {
			if !strings.Contains(r, want) {
				t.Fatalf("nudge %d lacks %q:\n%s", i+1, want, r)
			}
		}
	}
	// Each nudge is what the next request ends with.
	for i, req := range h.prov.Requests()[2:5] {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != model.RoleUser || last.Text() != rem[i] {
			t.Fatalf("request %d ends with %+v", i+3, last)
		}
	}
	var titles []string
	for _, n := range notices(rows) {
		titles = append(titles, n.Severity+": "+n.Title)
	}
	want := []string{
		"info: Checklist: 2 open items, continuing, nudge 1 of 3",
		"info: Checklist: 2 open items, continuing, nudge 2 of 3",
		"info: Checklist: 2 open items, continuing, nudge 3 of 3",
		"warning: Checklist: turn ended with 2 open items after 3 nudges in a row without a tool call",
	}
	if strings.Join(titles, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notices:\n%s\nwant:\n%s", strings.Join(titles, "\n"), strings.Join(want, "\n"))
	}
	if got := ids(s.p.Items()); got != "c1:pending:Write the parser c2:pending:Add tests" {
		t.Fatalf("items after turn 1: %s", got)
	}
	ch := changes(s.events.take())
	if len(ch) != 1 || ch[0].Dialect != "checklist" || ids(ch[0].Items) != "c1:pending:Write the parser c2:pending:Add tests" || ch[0].Total != 2 {
		t.Fatalf("changes in turn 1: %+v", ch)
	}

	res = s.run(t, userText("anything else?"))
	if res.Stop != agent.StopEndTurn || res.Reply != "Both finished." {
		t.Fatalf("turn 2: %+v", res)
	}
	rows = turnRows(h.rows(), 2)
	if n := notices(rows); len(n) != 1 || n[0].Title != "Checklist: 2 open items, continuing, nudge 1 of 3" {
		t.Fatalf("turn 2 notices: %+v", n)
	}
	if len(s.p.Items()) != 0 {
		t.Fatalf("items left: %+v", s.p.Items())
	}
	ch = changes(s.events.take())
	if len(ch) != 1 || len(ch[0].Items) != 0 || ch[0].Completed != 2 || ch[0].Total != 2 {
		t.Fatalf("changes in turn 2: %+v", ch)
	}
}

func TestNineNudgesPerTurn(t *testing.T) {
	// After the add: two bare replies, then a read before every reply, so
	// the run of three never completes and the turn's ceiling ends it.
	rounds := []string{calls(add("a", "Ship it")), say("r1"), say("r2")}
	for i := 3; i <= 10; i++ {
		rounds = append(rounds, calls(read(fmt.Sprint("read", i))), say(fmt.Sprint("r", i)))
	}
	h := newHarness(t, rounds...)
	s := h.engine(setup{})
	res := s.run(t, userText("go"))
	if res.Stop != plan.StopIncomplete || res.Reply != "r10" || res.Rounds != len(rounds) {
		t.Fatalf("turn: %+v (script has %d rounds)", res, len(rounds))
	}
	ns := notices(h.rows())
	if len(ns) != 10 {
		t.Fatalf("%d notices, want 9 nudges and a warning: %+v", len(ns), ns)
	}
	runs := []int{1, 2, 1, 1, 1, 1, 1, 1, 1}
	for i, n := range ns[:9] {
		want := fmt.Sprintf("Checklist: 1 open item, continuing, nudge %d of 3", runs[i])
		if n.Severity != session.SeverityInfo || n.Title != want {
			t.Fatalf("notice %d: %+v, want %q", i+1, n, want)
		}
	}
	last := ns[9]
	if last.Severity != session.SeverityWarning || last.Title != "Checklist: turn ended with 1 open item after 9 nudges this turn" {
		t.Fatalf("warning: %+v", last)
	}
	if len(reminders(h.rows())) != 9 {
		t.Fatalf("reminders: %d", len(reminders(h.rows())))
	}
}

func TestDeferredItemDoesNotHoldTheTurn(t *testing.T) {
	h := newHarness(t,
		calls(add("a", "Deploy"), edit("e", map[string]string{"id": "c1", "status": "deferred", "reason": "the user approves the deploy"})),
		say("Waiting for your approval."),
	)
	s := h.engine(setup{})
	res := s.run(t, userText("deploy"))
	if res.Stop != agent.StopEndTurn || res.Rounds != 2 || len(notices(h.rows())) != 0 {
		t.Fatalf("turn %+v, notices %+v", res, notices(h.rows()))
	}
	if got := ids(s.p.Items()); got != "c1:deferred:Deploy:the user approves the deploy:" {
		t.Fatalf("items: %s", got)
	}
}

func TestTaskReportReopensDeferredItem(t *testing.T) {
	tk := newTasks("t1")
	h := newHarness(t,
		// Turn 1: the item waits on a background task; the turn ends.
		calls(add("a", "Run the migration"), edit("e", map[string]string{"id": "c1", "status": "deferred", "reason": "the migration runs in the background", "task": "t1"})),
		say("The migration is running; I will check when it reports."),
		// Turn 2, the report's: the item is open again and holds the turn.
		say("The migration finished."),
		calls(edit("e2", map[string]string{"id": "c1", "status": "completed"})),
		say("Done."),
	)
	s := h.engine(setup{tasks: tk})
	res := s.run(t, userText("migrate"))
	if res.Stop != agent.StopEndTurn || res.Rounds != 2 || len(notices(h.rows())) != 0 {
		t.Fatalf("turn 1 %+v, notices %+v", res, notices(h.rows()))
	}
	if got := ids(s.p.Items()); got != "c1:deferred:Run the migration:the migration runs in the background:t1" {
		t.Fatalf("items after turn 1: %s", got)
	}
	s.events.take()

	// The host delivers the report as a turn naming the task in the row.
	tk.report("t1")
	report := session.UserMessage{Source: session.SourceTask, Tasks: []string{"t1"},
		Parts: model.Parts{model.Text{Text: "Background task t1 exited with status 0."}}}
	res = s.run(t, report)
	if res.Stop != agent.StopEndTurn || res.Reply != "Done." {
		t.Fatalf("turn 2: %+v", res)
	}
	rows := turnRows(h.rows(), 2)
	if n := notices(rows); len(n) != 1 || n[0].Title != "Checklist: 1 open item, continuing, nudge 1 of 3" {
		t.Fatalf("turn 2 notices: %+v", n)
	}
	if rem := reminders(rows); len(rem) != 1 || !strings.Contains(rem[0], "- c1 [pending] Run the migration") {
		t.Fatalf("nudge: %q", rem)
	}
	ch := changes(s.events.take())
	if len(ch) != 2 || ids(ch[0].Items) != "c1:pending:Run the migration" || len(ch[1].Items) != 0 {
		t.Fatalf("changes in turn 2: %+v", ch)
	}
}

func TestAbnormalEndsAreNotNudged(t *testing.T) {
	block := &funcTool{spec: tool.Spec{Name: "block", Description: "block", Schema: []byte(`{"type":"object"}`), Level: permission.Read, Kind: tool.KindOther}}
	cases := []struct {
		name  string
		round string
		want  agent.StopReason
	}{
		{"max_tokens", `{"text":"cut off","stop":"max_tokens"}`, agent.StopMaxTokens},
		{"refusal", `{"text":"I won't","stop":"refusal"}`, agent.StopRefusal},
		{"failed", `{"error":{"status":500,"body":"overloaded"}}`, agent.StopFailed},
		{"canceled", calls(call("b", "block", `{}`)), agent.StopCanceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, calls(add("a", "Finish")), tc.round, say("never played"))
			s := h.engine(setup{extra: []tool.Tool{block}})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			block.run = func(ctx context.Context, _ tool.Call) (tool.Result, error) {
				cancel()
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}
			res, _ := s.Run(ctx, userText("go"))
			if res.Stop != tc.want {
				t.Fatalf("stop %s, want %s", res.Stop, tc.want)
			}
			if rem := reminders(h.rows()); len(rem) != 0 {
				t.Fatalf("nudged: %q", rem)
			}
			for _, n := range notices(h.rows()) {
				if strings.HasPrefix(n.Title, "Checklist") {
					t.Fatalf("checklist notice: %+v", n)
				}
			}
			if h.prov.Remaining() != 1 {
				t.Fatalf("%d rounds left, want 1", h.prov.Remaining())
			}
			if got := ids(s.p.Items()); got != "c1:pending:Finish" {
				t.Fatalf("items: %s", got)
			}
		})
	}
}

func TestFilteredOutToolsDisableTheFeature(t *testing.T) {
	t.Run("no tools, no list, no nudge", func(t *testing.T) {
		h := newHarness(t, calls(add("a", "Something")), say("done"))
		s := h.engine(setup{deny: []string{"checklist_*"}})
		res := s.run(t, userText("go"))
		if res.Stop != agent.StopEndTurn || res.Rounds != 2 {
			t.Fatalf("turn: %+v", res)
		}
		if tr := results(h.rows())["a"]; tr.Status != session.StatusRefused || !strings.Contains(text(tr.Content), `no tool called "checklist_add"`) {
			t.Fatalf("add: %+v", tr)
		}
		for _, req := range h.prov.Requests() {
			if len(req.Tools) != 0 {
				t.Fatalf("tools offered: %+v", req.Tools)
			}
		}
		if len(s.p.Items()) != 0 || len(notices(h.rows())) != 0 || len(changes(s.events.take())) != 0 {
			t.Fatalf("items %+v notices %+v", s.p.Items(), notices(h.rows()))
		}
	})
	// Denying any one of the three turns the whole feature off: a list
	// that can be added to but not edited, or not read, is a trap.
	for _, denied := range []string{"checklist_edit", "checklist_read", "checklist_add"} {
		t.Run("deny "+denied, func(t *testing.T) {
			h := newHarness(t, calls(add("a", "Something")), say("done"))
			s := h.engine(setup{deny: []string{denied}})
			res := s.run(t, userText("go"))
			if res.Stop != agent.StopEndTurn || res.Rounds != 2 || s.p.Enabled() {
				t.Fatalf("turn: %+v enabled %v", res, s.p.Enabled())
			}
			for _, req := range h.prov.Requests() {
				if len(req.Tools) != 0 {
					t.Fatalf("tools offered: %+v", req.Tools)
				}
			}
			if tr := results(h.rows())["a"]; tr.Status != session.StatusRefused {
				t.Fatalf("add: %+v", tr)
			}
			if got := checklist.DeniedTools(tool.NewRegistry(denied).Denied); len(got) != 1 || got[0] != denied {
				t.Fatalf("DeniedTools = %q", got)
			}
		})
	}
	t.Run("items from before the filter hold nothing", func(t *testing.T) {
		h := newHarness(t, calls(add("a", "Old item")), say("bye"))
		h.engine(setup{noNudge: true}).run(t, userText("go"))
		h.play(say("still here"), calls(call("x", "checklist_read", `{}`)), say("ok"))
		s := h.engine(setup{deny: []string{"checklist_*"}})
		res := s.run(t, userText("again"))
		if res.Stop != agent.StopEndTurn || res.Rounds != 1 || len(notices(turnRows(h.rows(), 2))) != 0 {
			t.Fatalf("turn: %+v notices %+v", res, notices(h.rows()))
		}
		if len(s.p.Items()) != 0 || s.p.Enabled() {
			t.Fatalf("items %+v enabled %v", s.p.Items(), s.p.Enabled())
		}
		if txt := s.p.Compactor().CompactionText(t.Context()); txt != "" {
			t.Fatalf("compaction text %q", txt)
		}
	})
}

func TestSeveralCallsInOneRound(t *testing.T) {
	h := newHarness(t,
		calls(add("a1", "One"), add("a2", "Two"), edit("e", map[string]string{"id": "c2", "status": "in_progress"}), edit("bad", map[string]string{"id": "c3", "status": "completed"}), read("r")),
		calls(edit("d1", map[string]string{"id": "c1", "status": "completed"}), edit("d2", map[string]string{"id": "c2", "status": "completed"})),
		say("done"),
	)
	s := h.engine(setup{})
	s.run(t, userText("go"))
	rs := results(h.rows())
	if got := text(rs["a2"].Content); !strings.HasPrefix(got, "Added c2.") {
		t.Fatalf("second add: %q", got)
	}
	if rs["e"].Status != session.StatusOK || !strings.Contains(text(rs["e"].Content), "- c2 [in progress] Two") {
		t.Fatalf("edit in the same round: %+v", rs["e"])
	}
	if rs["bad"].Status != session.StatusError || !strings.Contains(text(rs["bad"].Content), "the ids on it are c1, c2") {
		t.Fatalf("unknown id: %+v", rs["bad"])
	}
	if got := text(rs["r"].Content); got != "The checklist:\n- c1 [pending] One\n- c2 [in progress] Two" {
		t.Fatalf("read: %q", got)
	}
	ch := changes(s.events.take())
	if len(ch) != 2 || ids(ch[0].Items) != "c1:pending:One c2:in_progress:Two" || len(ch[1].Items) != 0 {
		t.Fatalf("changes: %+v", ch)
	}
	if len(notices(h.rows())) != 0 {
		t.Fatalf("notices: %+v", notices(h.rows()))
	}
}

func TestToolSpecs(t *testing.T) {
	p := checklist.New(checklist.Options{})
	var names []string
	for _, tl := range p.Tools() {
		sp := tl.Spec()
		names = append(names, sp.Name)
		if !sp.Bookkeeping || sp.ParallelSafe || sp.Level != permission.Read || sp.Kind != tool.KindThink {
			t.Errorf("%s: %+v", sp.Name, sp)
		}
	}
	if strings.Join(names, ",") != "checklist_add,checklist_edit,checklist_read" {
		t.Fatalf("tools %v", names)
	}
	for _, tl := range p.Tools()[:2] {
		if d := tl.Spec().Description; !strings.Contains(d, "waits on a person, an event or an explicit later, never for one that is hard") {
			t.Errorf("%s description lacks the deferral rule", tl.Spec().Name)
		}
	}
	if _, err := tool.NewValidator(p.Tools()); err != nil {
		t.Fatal(err)
	}
}

// funcTool is a tool whose run is a field.
type funcTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f *funcTool) Spec() tool.Spec { return f.spec }

func (f *funcTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) { return f.run(ctx, c) }

// A person picks up a deferred item (the screen's /plan pick): their
// message reopens it, so that the turn is held until the agent disposes
// of it, and a resume folds the same list from the log.
func TestPersonPicksUpDeferredItem(t *testing.T) {
	h := newHarness(t,
		calls(add("a", "Deploy", "Tidy"), edit("e", map[string]string{"id": "c1", "status": "deferred", "reason": "the user approves the deploy"}),
			edit("e0", map[string]string{"id": "c2", "status": "deferred", "reason": "later"})),
		say("Waiting for your approval."),
		say("Deploying."),
		calls(edit("e2", map[string]string{"id": "c1", "status": "completed"})),
		say("Deployed."),
	)
	s := h.engine(setup{})
	s.run(t, userText("deploy"))
	pick := session.UserMessage{Parts: model.Parts{model.Text{Text: "approved"}}, Reopen: []string{"c1", "c9"}}
	res := s.run(t, pick)
	if res.Stop != agent.StopEndTurn || res.Reply != "Deployed." {
		t.Fatalf("turn 2: %+v", res)
	}
	if n := notices(turnRows(h.rows(), 2)); len(n) != 1 {
		t.Fatalf("the picked-up item did not hold the turn: %+v", n)
	}
	if got := ids(s.p.Items()); got != "c2:deferred:Tidy:later:" {
		t.Fatalf("items: %s", got)
	}
	// Replayed from the log, the list is the same.
	if got := ids(h.engine(setup{}).p.Items()); got != "c2:deferred:Tidy:later:" {
		t.Fatalf("replayed: %s", got)
	}
}
