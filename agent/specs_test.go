package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// source is a changing tool set, as an MCP server's.
type source struct {
	v     atomic.Uint64
	tools atomic.Pointer[[]tool.Tool]
}

func (s *source) Version() uint64 { return s.v.Load() }
func (s *source) Tools() []tool.Tool {
	if p := s.tools.Load(); p != nil {
		return *p
	}
	return nil
}
func (s *source) set(ts ...tool.Tool) { s.tools.Store(&ts); s.v.Add(1) }

// A change of the tool set between two requests reaches the second and is
// recorded in the log; a tool whose server is unavailable is a failed
// result the model reads, not a failed turn.
func TestToolSetChangeIsRecorded(t *testing.T) {
	h := newHarness(t, `[
		{"tool_calls":[{"id":"c1","name":"mcp__s__grow","arguments":{}}]},
		{"tool_calls":[{"id":"c2","name":"mcp__s__added","arguments":{}}]},
		{"text":"done"}]`)
	src := &source{}
	added := newTool("mcp__s__added", nil)
	added.run = func(context.Context, tool.Call) (tool.Result, error) {
		return tool.Result{}, fmt.Errorf("%w: the MCP server s is not connected", tool.ErrUnavailable)
	}
	grow := newTool("mcp__s__grow", nil)
	grow.run = func(context.Context, tool.Call) (tool.Result, error) {
		src.set(newTool("mcp__s__grow", nil), added)
		return tool.Text("grown"), nil
	}
	src.set(grow)
	reg := tool.NewRegistry()
	reg.AddSource(src, nil)
	e := h.engine(agent.Options{Tools: reg})
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("run: %+v %v", res, err)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 3 || len(reqs[0].Tools) != 1 || len(reqs[1].Tools) != 2 {
		t.Fatalf("tools per request: %d requests", len(reqs))
	}
	var notices []session.Notice
	for _, r := range h.rows() {
		if n, ok := r.Entry.(session.Notice); ok {
			notices = append(notices, n)
		}
	}
	if len(notices) != 1 || notices[0].Title != "The tools changed" || notices[0].Description != "now offered: mcp__s__added" {
		t.Fatalf("notices = %+v", notices)
	}
	rs := results(h.rows())
	if len(rs) != 2 || rs[1].Status != session.StatusError || !strings.Contains(resultText(rs[1]), "not connected") {
		t.Fatalf("results = %+v", rs)
	}
}
