package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// A tool that spends on models (a sub-agent) has its spend counted in the
// turn's usage and recorded on its result; its progress reaches front
// doors as whole replacements of what the call shows.
func TestToolSpendAndProgress(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"c1","name":"delegate"}],"usage":{"input_tokens":10,"output_tokens":2}},
	 {"text":"done","usage":{"input_tokens":20,"output_tokens":3}}]`)
	child := model.Usage{InputTokens: 100, OutputTokens: 40, CacheReadTokens: 7}
	delegate := newTool("delegate", nil)
	delegate.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
		c.Progress([]string{"file_read a.go"})
		c.Progress([]string{"file_read a.go", "shell_execute go test"})
		r := tool.Text("report")
		r.Usage = child
		return r, nil
	}
	var mu sync.Mutex
	var progress [][]string
	e := h.engine(agent.Options{Events: func(ev agent.Event) {
		if p, ok := ev.(agent.ToolCallProgress); ok && p.CallID == "c1" {
			mu.Lock()
			progress = append(progress, p.Lines)
			mu.Unlock()
		}
	}}, delegate)
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil {
		t.Fatal(err)
	}
	want := model.Usage{InputTokens: 130, OutputTokens: 45, CacheReadTokens: 7}
	if res.Usage != want {
		t.Errorf("turn usage = %+v, want %+v (the tool's spend included)", res.Usage, want)
	}
	if got := results(h.rows()); len(got) != 1 || got[0].Usage != child {
		t.Errorf("stored results = %+v, want one carrying the tool's usage %+v", got, child)
	}
	if len(progress) != 2 || !slices.Equal(progress[1], []string{"file_read a.go", "shell_execute go test"}) {
		t.Errorf("progress events = %q", progress)
	}
	// A call that spent nothing stores no usage at all.
	if _, payload, _ := session.EncodeEntry(session.ToolResult{CallID: "x", Name: "n", Status: "ok"}); string(payload) != `{"call_id":"x","name":"n","status":"ok","content":[]}` {
		t.Errorf("zero usage encodes as %s", payload)
	}
}
