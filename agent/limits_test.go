package agent_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// The turn's tool-call limit counts calls across rounds, bookkeeping
// included: the call past it is refused with the limit named, the rest of
// its round is refused unrun, and the turn stops with a notice.
func TestMaxToolCallsStopsTheTurn(t *testing.T) {
	var ran []string
	work := newTool("work", nil)
	work.run = func(_ context.Context, c tool.Call) (tool.Result, error) {
		ran = append(ran, c.ID)
		return tool.Text("ok"), nil
	}
	plan := newTool("plan", func(s *tool.Spec) { s.Bookkeeping = true })
	plan.run = work.run
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"1","name":"work","arguments":{"n":1}},{"id":"p","name":"plan"}]},
	 {"tool_calls":[{"id":"2","name":"work","arguments":{"n":2}},{"id":"3","name":"work","arguments":{"n":3}},{"id":"4","name":"work","arguments":{"n":4}}]},
	 {"text":"unreachable"}]`)
	e := h.engine(agent.Options{MaxToolCalls: 3}, work, plan)
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != agent.StopMaxToolCalls {
		t.Fatalf("res %+v err %v; want stop %s", res, err, agent.StopMaxToolCalls)
	}
	if got := strings.Join(ran, ","); got != "1,p,2" {
		t.Errorf("calls run: %s, want 1,p,2 (the third call of the turn is the last)", got)
	}
	if n := len(h.prov.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the turn stops at the limit", n)
	}
	byID := map[string]session.ToolResult{}
	for _, tr := range results(h.rows()) {
		byID[tr.CallID] = tr
	}
	if tr := byID["3"]; tr.Status != session.StatusRefused || !strings.Contains(resultText(tr), "limit of 3 tool calls") {
		t.Errorf("call past the limit: %s %q", tr.Status, resultText(tr))
	}
	if tr := byID["4"]; tr.Status != session.StatusRefused || !strings.Contains(resultText(tr), "turn stopped before it") {
		t.Errorf("call after the stop: %s %q", tr.Status, resultText(tr))
	}
	ns := noticesOf(h.rows())
	if len(ns) != 1 || ns[0].Severity != session.SeverityWarning || ns[0].Title != "Turn stopped after 3 tool calls (the limit)" {
		t.Errorf("notices %+v", ns)
	}
}

// Without a limit set, a turn may make 500 calls and no more.
func TestMaxToolCallsDefault(t *testing.T) {
	calls := make([]string, 0, 501)
	for i := range 501 {
		b, _ := json.Marshal(map[string]any{"id": strconv.Itoa(i), "name": "work", "arguments": map[string]int{"n": i}})
		calls = append(calls, string(b))
	}
	h := newHarness(t, `[{"tool_calls":[`+strings.Join(calls, ",")+`]},{"text":"unreachable"}]`)
	ran := 0
	work := newTool("work", nil)
	work.run = func(context.Context, tool.Call) (tool.Result, error) { ran++; return tool.Text("ok"), nil }
	res, err := h.engine(agent.Options{}, work).Run(t.Context(), userText("go"))
	if err != nil || res.Stop != agent.StopMaxToolCalls || ran != 500 {
		t.Fatalf("res %+v err %v ran %d; want stop %s after 500", res, err, ran, agent.StopMaxToolCalls)
	}
}

// The repeat guard compares arguments as JSON values: the same object
// written with its keys in another order or other spacing is the same
// call, while numbers that differ only past a float64's precision are
// different calls.
func TestRepeatGuardComparesJSONValues(t *testing.T) {
	const schema = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"object"}}}`
	t.Run("same value written differently", func(t *testing.T) {
		ran := 0
		work := newTool("work", func(s *tool.Spec) { s.Schema = json.RawMessage(schema) })
		work.run = func(context.Context, tool.Call) (tool.Result, error) { ran++; return tool.Text("same"), nil }
		h := newHarness(t, `[
		 {"tool_calls":[{"id":"1","name":"work","raw_arguments":"{\"a\":1,\"b\":{\"x\":1,\"y\":2}}"}]},
		 {"tool_calls":[{"id":"2","name":"work","raw_arguments":"{\"b\":{\"y\":2,\"x\":1},\"a\":1}"}]},
		 {"tool_calls":[{"id":"3","name":"work","raw_arguments":"{ \"a\" : 1 ,\n \"b\" : { \"x\" : 1 , \"y\" : 2 } }"}]},
		 {"tool_calls":[{"id":"4","name":"work","raw_arguments":"{\"b\":{\"x\":1,\"y\":2},\"a\":1}"}]},
		 {"text":"unreachable"}]`)
		res, err := h.engine(agent.Options{}, work).Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopRepeat || ran != 2 {
			t.Fatalf("res %+v err %v ran %d; want stop %s after 2 runs", res, err, ran, agent.StopRepeat)
		}
	})
	t.Run("numbers past float precision differ", func(t *testing.T) {
		ran := 0
		work := newTool("work", func(s *tool.Spec) { s.Schema = json.RawMessage(schema) })
		work.run = func(context.Context, tool.Call) (tool.Result, error) { ran++; return tool.Text("next"), nil }
		h := newHarness(t, `[
		 {"tool_calls":[{"id":"1","name":"work","raw_arguments":"{\"a\":9007199254740993}"}]},
		 {"tool_calls":[{"id":"2","name":"work","raw_arguments":"{\"a\":9007199254740992}"}]},
		 {"tool_calls":[{"id":"3","name":"work","raw_arguments":"{\"a\":9007199254740993}"}]},
		 {"tool_calls":[{"id":"4","name":"work","raw_arguments":"{\"a\":9007199254740992}"}]},
		 {"text":"done"}]`)
		res, err := h.engine(agent.Options{}, work).Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopEndTurn || ran != 4 {
			t.Fatalf("res %+v err %v ran %d; want all 4 calls run", res, err, ran)
		}
	})
}
