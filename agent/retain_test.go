package agent_test

import (
	"context"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// The retention check: facts and constraints planted early (the first
// message, a pinned one, a skill's body) reach the model verbatim after
// two compactions whose summaries forgot them all, on resume too, while
// what nobody pinned is gone; every request still starts with the system
// prompt, and each compaction row says what it dropped.
func TestCompactionRetainsVerbatim(t *testing.T) {
	const (
		first  = "Deploy target is eu-west-3; never touch vendor/."
		pinned = "Constraint: every price is in integer cents."
		body   = "SKILL BODY: run make release, then tag vX.Y.Z."
		chat   = "unpinned chatter about lunch"
		system = "AGENTS.md: be terse.\n<env>cwd=/w</env>"
	)
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"c1","name":"work","arguments":{"n":1}}]},
	 {"text":"ok1"},
	 {"text":"ok2"},
	 {"text":"ok3"},
	 {"text":"ok4"},
	 {"text":"summary one: nothing remembered"},
	 {"text":"ok5"},
	 {"text":"summary two: still nothing"},
	 {"text":"ok6"},
	 {"text":"ok7"}]`)
	work := newTool("work", nil)
	work.run = func(context.Context, tool.Call) (tool.Result, error) { return tool.Text("BIGOUTPUT"), nil }
	e := h.engine(agent.Options{System: system}, work)
	run := func(e *agent.Engine, m session.UserMessage) {
		t.Helper()
		if res, err := e.Run(t.Context(), m); err != nil || res.Stop != agent.StopEndTurn {
			t.Fatalf("turn %q: %+v %v", m.Parts, res, err)
		}
	}
	run(e, userText(first))
	p := userText(pinned)
	p.Pinned = true
	run(e, p)
	run(e, session.UserMessage{Parts: model.Parts{model.Text{Text: "/release now"}}, Command: "release",
		Expansion: model.Parts{model.Text{Text: body}}})
	run(e, userText(chat))
	if err := e.CompactFocus(t.Context(), "the release steps"); err != nil {
		t.Fatal(err)
	}
	run(e, userText("more"))
	if err := e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	run(e, userText("last"))

	reqs := h.prov.Requests()
	if !strings.Contains(reqs[5].Messages[len(reqs[5].Messages)-1].Text(), "keep in particular: the release steps") {
		t.Error("the focus did not reach the summary request")
	}
	check := func(name string, req *model.Request) {
		t.Helper()
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Text() + "\n")
		}
		text := all.String()
		for _, want := range []string{first, pinned, body} {
			if strings.Count(text, want) != 1 {
				t.Errorf("%s: %q carried %d times, want once verbatim:\n%s", name, want, strings.Count(text, want), text)
			}
		}
		if strings.Contains(text, chat) {
			t.Errorf("%s: an unpinned message survived two summaries", name)
		}
		if req.System != system {
			t.Errorf("%s: system prompt %q", name, req.System)
		}
	}
	check("after two compactions", reqs[8])

	rows := h.rows()
	var dropped []session.Dropped
	for _, r := range rows {
		if c, ok := r.Entry.(session.Compaction); ok {
			if c.Dropped == nil {
				t.Fatal("compaction row without what it dropped")
			}
			dropped = append(dropped, *c.Dropped)
		}
	}
	if len(dropped) != 2 {
		t.Fatalf("%d compactions", len(dropped))
	}
	if d := dropped[0]; d.Turns != 3 || d.ToolOutputs != 1 || d.ToolOutputBytes != len("BIGOUTPUT") || d.Messages != 7 {
		t.Errorf("first compaction dropped %+v", d)
	}
	if d := dropped[1]; d.Turns != 1 || d.ToolOutputs != 0 || d.Messages != 2 {
		t.Errorf("second compaction dropped %+v", d)
	}

	// A resumed engine (and a fork, which copies these rows) folds the
	// retained text from the last boundary's checkpoint.
	e2 := h.engine(agent.Options{System: system})
	run(e2, userText("after resume"))
	reqs = h.prov.Requests()
	check("after resume", reqs[len(reqs)-1])
}
