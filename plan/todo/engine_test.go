package todo_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan/todo"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

const (
	planA      = `{"plan":[{"id":"read","step":"read the schema","status":"completed"},{"id":"query","step":"write the query","status":"in_progress"},{"id":"verify","step":"verify the numbers","status":"pending"}]}`
	planTwoHot = `{"plan":[{"step":"x","status":"in_progress"},{"step":"y","status":"in_progress"}]}`
	patchDone  = `{"operations":[{"action":"replace","id":"query","item":{"step":"write the query","status":"completed"}},{"action":"replace","id":"verify","item":{"step":"verify the numbers","status":"in_progress"}}]}`
	patchWipe  = `{"operations":[{"action":"remove","id":"read"},{"action":"remove","id":"query"},{"action":"remove","id":"verify"}]}`
)

// The plan the model is shown is the one the accepted calls add up to; a
// call the tool refused, one the gate denied, one the validator refused
// and one that never finished change nothing, live or on replay.
func TestReplayAppliesOnlyAcceptedCalls(t *testing.T) {
	h := newHarness(t)
	rounds := `[
	 {"tool_calls":[{"id":"1","name":"update_plan","arguments":` + planA + `}]},
	 {"tool_calls":[{"id":"2","name":"update_plan","arguments":` + planTwoHot + `}]},
	 {"tool_calls":[{"id":"3","name":"patch_plan","arguments":` + patchDone + `}]},
	 {"tool_calls":[{"id":"4","name":"update_plan","arguments":{"plan":"not a list"}}]},
	 {"text":"done"}]`
	store := todo.NewStore()
	r := h.engine(todo.Plugin{Store: store}, rounds, agent.Options{})
	if _, err := r.e.Run(t.Context(), userText("count the rows")); err != nil {
		t.Fatal(err)
	}
	want := "read the schema:completed,write the query:completed,verify the numbers:in_progress"
	if got := texts(store.Items()); got != want {
		t.Fatalf("live plan %s", got)
	}
	var statuses []string
	for _, tr := range results(h.rows()) {
		statuses = append(statuses, tr.Status)
	}
	if got := strings.Join(statuses, ","); got != "ok,error,ok,refused" {
		t.Fatalf("statuses %s", got)
	}
	// Every request after the first write carries the reminder as it
	// stood, at the end of the last user message.
	reqs := r.prov.Requests()
	if strings.Contains(lastRead(t, reqs[0]), "[run plan]") {
		t.Fatal("reminder before any plan exists")
	}
	last := lastRead(t, reqs[4])
	if !strings.HasSuffix(last, todo.ReminderHeader+"[x] read the schema (id: read)\n[x] write the query (id: query)\n[~] verify the numbers (id: verify)") {
		t.Fatalf("last request ends with %q", last)
	}
	if strings.Count(last, "[run plan]") != 1 {
		t.Fatal("reminders stack")
	}
	for _, row := range h.rows() {
		if um, ok := row.Entry.(session.UserMessage); ok && strings.Contains(text(um.Parts), "[run plan]") {
			t.Fatal("the reminder was persisted")
		}
	}
	// Live changes are announced; the refused calls announce nothing.
	cs := r.changes()
	if len(cs) != 2 || cs[1].Dialect != todo.FoldName || cs[1].Completed != 2 || cs[1].Total != 3 {
		t.Fatalf("changes %+v", cs)
	}

	// A call the gate denies and one that never finished, appended to
	// the log, are ignored as well.
	deny := `[{"tool_calls":[{"id":"5","name":"patch_plan","arguments":` + patchWipe + `}]},{"text":"ok"}]`
	gate := &tool.Gate{Level: func() permission.Level { return permission.Read },
		Overrides: map[string]permission.Level{todo.PatchName: permission.Unrestricted}}
	r2 := h.engine(todo.Plugin{Store: store}, deny, agent.Options{Gate: gate})
	if _, err := r2.e.Run(t.Context(), userText("again")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Append(t.Context(), h.id, []session.Row{
		{Turn: 3, Entry: userText("third")},
		{Turn: 3, Entry: session.AssistantMessage{Parts: []modelPart{toolCall("6", todo.PatchName, patchWipe)}}},
		{Turn: 3, Entry: session.ToolResult{CallID: "6", Name: todo.PatchName, Status: session.StatusCanceled}},
	}); err != nil {
		t.Fatal(err)
	}
	if got := texts(store.Items()); got != want {
		t.Fatalf("plan after a denied call %s", got)
	}
	if len(r2.changes()) != 0 {
		t.Fatalf("denied call announced %+v", r2.changes())
	}

	// A fresh store rebuilt from the log holds the same plan, and replay
	// announces nothing.
	fresh := todo.NewStore()
	r3 := h.engine(todo.Plugin{Store: fresh}, `[{"text":"hi"}]`, agent.Options{})
	if got := texts(fresh.Items()); got != want {
		t.Fatalf("replayed plan %s", got)
	}
	if _, err := r3.e.Run(t.Context(), userText("fourth")); err != nil {
		t.Fatal(err)
	}
	if len(r3.changes()) != 0 {
		t.Fatalf("replay announced %+v", r3.changes())
	}
	if !strings.Contains(lastRead(t, r3.prov.Requests()[0]), "[~] verify the numbers") {
		t.Fatal("the replayed plan is not in the request")
	}
}

// A result recorded before results carried the plan is recomputed from
// its call's arguments.
func TestReplayWithoutRecordedState(t *testing.T) {
	h := newHarness(t)
	_, err := h.store.Append(t.Context(), h.id, []session.Row{
		{Turn: 1, Entry: userText("go")},
		{Turn: 1, Entry: session.AssistantMessage{Parts: []modelPart{toolCall("1", todo.UpdateName, planA)}}},
		{Turn: 1, Entry: session.ToolResult{CallID: "1", Name: todo.UpdateName, Status: session.StatusOK}},
		{Turn: 1, Entry: session.AssistantMessage{Parts: []modelPart{toolCall("2", todo.PatchName, patchDone)}}},
		{Turn: 1, Entry: session.ToolResult{CallID: "2", Name: todo.PatchName, Status: session.StatusOK}},
	})
	if err != nil {
		t.Fatal(err)
	}
	store := todo.NewStore()
	h.engine(todo.Plugin{Store: store}, `[]`, agent.Options{})
	if got := texts(store.Items()); got != "read the schema:completed,write the query:completed,verify the numbers:in_progress" {
		t.Fatalf("plan %s", got)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	h := newHarness(t)
	var p []map[string]string
	for i := range 12 {
		p = append(p, map[string]string{"step": "s" + string(rune('a'+i)), "status": "completed", "phase": "one"})
	}
	p = append(p, map[string]string{"step": "now", "status": "in_progress", "id": "now"}, map[string]string{"step": "later", "status": "blocked"})
	args, _ := json.Marshal(map[string]any{"plan": p})
	store := todo.NewStore()
	r := h.engine(todo.Plugin{Store: store}, `[{"tool_calls":[{"id":"1","name":"update_plan","arguments":`+string(args)+`}]},{"text":"paused"}]`, agent.Options{})
	if _, err := r.e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	cp := store.Checkpoint()
	restored, err := todo.Restore(cp)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Retired() != 7 || texts(restored.Items()) != texts(store.Items()) || restored.Items()[5].ID != "now" || restored.Items()[0].Phase != "one" {
		t.Fatalf("restored %d %+v", restored.Retired(), restored.Items())
	}
	// A fresh agent on a new session continues the plan: it sees it and
	// can patch it.
	h2 := newHarness(t)
	r2 := h2.engine(todo.Plugin{Store: restored}, `[{"tool_calls":[{"id":"1","name":"patch_plan","arguments":{"operations":[{"action":"replace","id":"now","item":{"step":"now","status":"completed"}}]}}]},{"text":"done"}]`, agent.Options{})
	if _, err := r2.e.Run(t.Context(), userText("continue")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lastRead(t, r2.prov.Requests()[0]), "[x] (7 earlier steps completed)\n") {
		t.Fatalf("first request %q", lastRead(t, r2.prov.Requests()[0]))
	}
	if restored.Retired() != 8 || texts(restored.Items()) != "si:completed,sj:completed,sk:completed,sl:completed,now:completed,later:blocked" {
		t.Fatalf("continued %d %s", restored.Retired(), texts(restored.Items()))
	}
	if _, err := todo.Restore(json.RawMessage(`{"items":[{"text":"x","status":"done"}]}`)); err == nil {
		t.Fatal("a checkpoint with an unknown status restored")
	}
}

// A compaction boundary records the plan; replay restores it and folds
// the rows after it.
func TestCompactionCheckpoint(t *testing.T) {
	h := newHarness(t)
	store := todo.NewStore()
	r := h.engine(todo.Plugin{Store: store}, `[{"tool_calls":[{"id":"1","name":"update_plan","arguments":`+planA+`}]},{"text":"a"},{"text":"b"},{"text":"summary"},{"tool_calls":[{"id":"2","name":"patch_plan","arguments":`+patchDone+`}]},{"text":"c"}]`, agent.Options{})
	for _, in := range []string{"one", "two"} {
		if _, err := r.e.Run(t.Context(), userText(in)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Run(t.Context(), userText("three")); err != nil {
		t.Fatal(err)
	}
	rows := h.rows()
	i := session.LatestCompaction(rows)
	if i < 0 {
		t.Fatal("no compaction")
	}
	if _, ok := rows[i].Entry.(session.Compaction).Checkpoint[todo.FoldName]; !ok {
		t.Fatal("no checkpoint for the plan")
	}
	// Drop the calls before the boundary from a copy of the log: the
	// checkpoint alone must carry the plan.
	fresh := todo.NewStore()
	f, _ := todo.Plugin{Store: fresh}.Fold()
	folder := session.NewFolder(f)
	if err := folder.Replay(rows[i : i+1]); err != nil {
		t.Fatal(err)
	}
	if got := texts(fresh.Items()); got != "read the schema:completed,write the query:in_progress,verify the numbers:pending" {
		t.Fatalf("checkpoint restored %s", got)
	}
	// The patch after the boundary applies to the restored plan, also
	// when its result recorded no plan.
	var tail []session.Row
	for _, row := range rows[i:] {
		if tr, ok := row.Entry.(session.ToolResult); ok {
			tr.State = nil
			row.Entry = tr
		}
		tail = append(tail, row)
	}
	if err := folder.Replay(tail); err != nil {
		t.Fatal(err)
	}
	if got, want := texts(fresh.Items()), texts(store.Items()); got != want || !strings.Contains(got, "verify the numbers:in_progress") {
		t.Fatalf("replayed %s want %s", got, want)
	}
}

// A fork copies its parent's rows but starts with a fresh plan; its own
// calls count, also after it is reopened.
func TestForkStartsFresh(t *testing.T) {
	h := newHarness(t)
	parent := h.engine(todo.Plugin{Store: todo.NewStore()}, `[{"tool_calls":[{"id":"1","name":"update_plan","arguments":`+planA+`}]},{"text":"a"}]`, agent.Options{})
	if _, err := parent.e.Run(t.Context(), userText("one")); err != nil {
		t.Fatal(err)
	}
	from := session.LastTurn(h.rows()) + 1
	store := todo.NewStore()
	fork := h.engine(todo.Plugin{Store: store, FromTurn: from}, `[{"text":"no plan here"},{"tool_calls":[{"id":"2","name":"update_plan","arguments":{"plan":[{"step":"fork work","status":"pending"}]}}]},{"text":"b"}]`, agent.Options{})
	if len(store.Items()) != 0 {
		t.Fatalf("fork inherited %s", texts(store.Items()))
	}
	if _, err := fork.e.Run(t.Context(), userText("two")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lastRead(t, fork.prov.Requests()[0]), "[run plan]") {
		t.Fatal("the fork was shown its parent's plan")
	}
	if _, err := fork.e.Run(t.Context(), userText("three")); err != nil {
		t.Fatal(err)
	}
	reopened := todo.NewStore()
	h.engine(todo.Plugin{Store: reopened, FromTurn: from}, `[]`, agent.Options{})
	if got := texts(reopened.Items()); got != "fork work:pending" {
		t.Fatalf("reopened fork %s", got)
	}
}

func TestCompletionCheck(t *testing.T) {
	open := `{"tool_calls":[{"id":"p","name":"update_plan","arguments":` + planA + `}]}`
	t.Run("nudges then todo_incomplete", func(t *testing.T) {
		h := newHarness(t)
		r := h.engine(todo.Plugin{Store: todo.NewStore(), CheckCompletion: true, MaxCompletionNudges: 2},
			`[`+open+`,{"text":"all done!"},{"text":"really done"},{"text":"done, I promise"}]`, agent.Options{})
		res, err := r.e.Run(t.Context(), userText("go"))
		if err != nil || res.Stop != todo.StopIncomplete || res.Stop.Normal() {
			t.Fatalf("res %+v err %v", res, err)
		}
		var reminders, warnings int
		var nudge string
		for _, row := range h.rows() {
			switch e := row.Entry.(type) {
			case session.UserMessage:
				if e.Source == session.SourceReminder {
					reminders++
					nudge = text(e.Parts)
				}
			case session.Notice:
				if e.Severity == session.SeverityWarning && strings.Contains(e.Title, "2 open steps") {
					warnings++
				}
			}
		}
		if reminders != 2 || warnings != 1 {
			t.Fatalf("%d reminders, %d warnings", reminders, warnings)
		}
		for _, want := range []string{"[~] write the query (id: query)\n[ ] verify the numbers (id: verify)", "verif", `"blocked"`, "not done"} {
			if !strings.Contains(nudge, want) {
				t.Errorf("nudge lacks %q:\n%s", want, nudge)
			}
		}
		// The next turn starts with a fresh count.
		r2 := h.engine(todo.Plugin{Store: todo.NewStore(), CheckCompletion: true, MaxCompletionNudges: 1}, `[{"text":"x"},{"text":"y"}]`, agent.Options{})
		if res, _ := r2.e.Run(t.Context(), userText("again")); res.Stop != todo.StopIncomplete || res.Rounds != 2 {
			t.Fatalf("second turn %+v", res)
		}
	})
	t.Run("resolved steps end the turn", func(t *testing.T) {
		h := newHarness(t)
		resolve := `{"tool_calls":[{"id":"r","name":"patch_plan","arguments":{"operations":[{"action":"replace","id":"query","item":{"step":"write the query","status":"completed"}},{"action":"replace","id":"verify","item":{"step":"verify the numbers","status":"blocked"}}]}}]}`
		r := h.engine(todo.Plugin{Store: todo.NewStore(), CheckCompletion: true},
			`[`+open+`,{"text":"done?"},`+resolve+`,{"text":"done: the numbers wait on the DBA"}]`, agent.Options{})
		res, err := r.e.Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopEndTurn || res.Reply != "done: the numbers wait on the DBA" {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("no ceiling", func(t *testing.T) {
		h := newHarness(t)
		rounds := `[` + open + strings.Repeat(`,{"text":"stop"}`, 6) + `,{"tool_calls":[{"id":"z","name":"update_plan","arguments":{"plan":[{"step":"all","status":"abandoned"}]}}]},{"text":"gave up, because"}]`
		r := h.engine(todo.Plugin{Store: todo.NewStore(), CheckCompletion: true}, rounds, agent.Options{})
		res, err := r.e.Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopEndTurn || res.Rounds != 9 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("off", func(t *testing.T) {
		h := newHarness(t)
		r := h.engine(todo.Plugin{Store: todo.NewStore()}, `[`+open+`,{"text":"bye"}]`, agent.Options{})
		if res, _ := r.e.Run(t.Context(), userText("go")); res.Stop != agent.StopEndTurn {
			t.Fatalf("res %+v", res)
		}
	})
}

// A user's cancel or a new turn leaves the plan as it is.
func TestUserTurnsLeaveThePlan(t *testing.T) {
	h := newHarness(t)
	store := todo.NewStore()
	r := h.engine(todo.Plugin{Store: store}, `[{"tool_calls":[{"id":"1","name":"update_plan","arguments":`+planA+`}]},{"text":"a"},{"text":"b"}]`, agent.Options{})
	ctx, cancel := contextWithCancel(t)
	if _, err := r.e.Run(ctx, userText("one")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if res, _ := r.e.Run(ctx, userText("two")); res.Stop != agent.StopCanceled {
		t.Fatalf("res %+v", res)
	}
	if _, err := r.e.Run(t.Context(), userText("three")); err != nil {
		t.Fatal(err)
	}
	if got := texts(store.Items()); got != "read the schema:completed,write the query:in_progress,verify the numbers:pending" {
		t.Fatalf("plan %s", got)
	}
	if cs := r.changes(); len(cs) != 1 {
		t.Fatalf("changes %+v", cs)
	}
}

// A turn that comes back under a withdrawn turn's number is a new run:
// its completion reminders start from none.
func TestCompletionCountsPerRun(t *testing.T) {
	store, err := todo.Restore(json.RawMessage(`{"items":[{"text":"verify the numbers","status":"pending"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := todo.Plugin{Store: store, CheckCompletion: true, MaxCompletionNudges: 1}.Interceptor()
	if err != nil {
		t.Fatal(err)
	}
	if d := ic.BeforeStop(t.Context(), agent.StopInfo{Turn: 3, Run: 1}); !d.Continue {
		t.Fatalf("first end of run 1: %+v", d)
	}
	if d := ic.BeforeStop(t.Context(), agent.StopInfo{Turn: 3, Run: 1}); d.Stop != todo.StopIncomplete {
		t.Fatalf("second end of run 1: %+v", d)
	}
	// Turn 3 was withdrawn; the next run reuses its number.
	if d := ic.BeforeStop(t.Context(), agent.StopInfo{Turn: 3, Run: 2}); !d.Continue {
		t.Fatalf("first end of run 2 was not reminded: %+v", d)
	}
}
