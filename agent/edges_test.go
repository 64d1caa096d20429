package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// hasCompaction reports whether rows hold a compaction boundary.
func hasCompaction(rows []session.Row) bool {
	return session.LatestCompaction(rows) >= 0
}

// Automatic compaction starts exactly when the next request's estimate
// (the tokens the provider counted for the last one, plus four bytes a
// token for what was added since) reaches CompactAt of the window; a
// CompactAt outside (0, 1) means the default 0.8.
func TestCompactionThreshold(t *testing.T) {
	// The second turn's input is 400 bytes: 100 tokens on top of what the
	// first reply's usage reports.
	input := strings.Repeat("x", 400)
	for _, tc := range []struct {
		name      string
		compactAt float64
		measured  int
		compacts  bool
	}{
		{"at the default threshold", 0, 700, true},
		{"a token below it", 0, 699, false},
		{"CompactAt 1 means the default", 1, 700, true},
		{"CompactAt 1 means the default, below", 1, 699, false},
		{"a CompactAt of its own", 0.5, 400, true},
		{"a CompactAt of its own, below", 0.5, 399, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fmt.Sprintf(`[
			 {"text":"one","usage":{"input_tokens":%d}},
			 {"text":"the summary"},
			 {"text":"two"}]`, tc.measured))
			e := h.engine(agent.Options{ContextWindow: 1000, CompactAt: tc.compactAt})
			if _, err := e.Run(t.Context(), userText("first")); err != nil {
				t.Fatal(err)
			}
			res, err := e.Run(t.Context(), userText(input))
			if err != nil {
				t.Fatal(err)
			}
			if got := hasCompaction(h.rows()); got != tc.compacts {
				t.Errorf("compacted %v, want %v (reply %q)", got, tc.compacts, res.Reply)
			}
		})
	}
}

// A manual compaction reports the gauge once it is done, estimating the
// compacted conversation at four bytes a token; compacting again with
// nothing new is refused and reports nothing.
func TestManualCompactionReportsTheGauge(t *testing.T) {
	summary := strings.Repeat("s", 4000)
	h := newHarness(t, fmt.Sprintf(`[{"text":"one"},{"text":"two"},{"text":%q},{"text":"three"}]`, summary))
	var mu sync.Mutex
	var usages []agent.Usage
	e := h.engine(agent.Options{ContextWindow: 100000, Events: func(ev agent.Event) {
		if u, ok := ev.(agent.Usage); ok {
			mu.Lock()
			usages = append(usages, u)
			mu.Unlock()
		}
	}})
	for _, in := range []string{"first", "second"} {
		if _, err := e.Run(t.Context(), userText(in)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	usages = nil
	mu.Unlock()
	if err := e.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := usages
	usages = nil
	mu.Unlock()
	if len(got) != 1 || got[0].Window != 100000 {
		t.Fatalf("usage events after Compact: %+v, want one with the window", got)
	}
	// The summary alone is 1,000 tokens; the kept turn adds a few.
	if tokens := got[0].ContextTokens; tokens < 1000 || tokens > 1100 {
		t.Errorf("context after compaction = %d tokens, want about 1,000 (4,000 bytes of summary)", tokens)
	}
	if err := e.Compact(t.Context()); !errors.Is(err, agent.ErrNothingToCompact) {
		t.Errorf("second Compact = %v, want %v", err, agent.ErrNothingToCompact)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(usages) != 0 {
		t.Errorf("a refused compaction reported %+v", usages)
	}
	if n := len(h.prov.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3: the refused compaction asks nothing", n)
	}
}

// A tool failing inside meka (a Go error, not a result) fails the turn,
// naming the call, once the round's results are stored.
func TestToolFailureFailsTheTurn(t *testing.T) {
	boom := errors.New("disk on fire")
	work := newTool("work", nil)
	work.run = func(context.Context, tool.Call) (tool.Result, error) { return tool.Result{}, boom }
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work"}]},{"text":"unreachable"}]`)
	res, err := h.engine(agent.Options{}, work).Run(t.Context(), userText("go"))
	if res.Stop != agent.StopFailed || !errors.Is(err, boom) || !strings.Contains(err.Error(), "run work") {
		t.Fatalf("res %+v err %v; want failed with the tool's error", res, err)
	}
	rs := results(h.rows())
	if len(rs) != 1 || rs[0].Status != session.StatusError || !strings.Contains(resultText(rs[0]), "disk on fire") {
		t.Fatalf("results %+v", rs)
	}
}

// A call canceled mid-run keeps what it had printed in its result.
func TestCanceledCallKeepsItsOutput(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	work := newTool("work", nil)
	work.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
		cancel()
		<-ctx.Done()
		return tool.Result{Content: model.Parts{model.Text{Text: "partial output"}}, IsError: true}, ctx.Err()
	}
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work"}]},{"text":"unreachable"}]`)
	res, _ := h.engine(agent.Options{}, work).Run(ctx, userText("go"))
	if res.Stop != agent.StopCanceled {
		t.Fatalf("res %+v", res)
	}
	rs := results(h.rows())
	if len(rs) != 1 || rs[0].Status != session.StatusCanceled || !strings.Contains(resultText(rs[0]), "partial output") {
		t.Fatalf("results %+v", rs)
	}
}

// locTool says which file a call touches.
type locTool struct{ *fakeTool }

func (l locTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return []tool.Location{{Path: cwd + "/touched.txt"}}
}

// ToolCallStarted carries the locations a tool says its call touches, and
// none for a call of no known tool.
func TestCallStartedCarriesLocations(t *testing.T) {
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"edit"},{"id":"b","name":"nosuch"}]},{"text":"done"}]`)
	var mu sync.Mutex
	started := map[string]agent.ToolCallStarted{}
	e := h.engine(agent.Options{Cwd: "/ws", Events: func(ev agent.Event) {
		if s, ok := ev.(agent.ToolCallStarted); ok {
			mu.Lock()
			started[s.CallID] = s
			mu.Unlock()
		}
	}}, locTool{newTool("edit", nil)})
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if l := started["a"].Locations; len(l) != 1 || l[0].Path != "/ws/touched.txt" {
		t.Errorf("edit call locations %+v", l)
	}
	if s, ok := started["b"]; !ok || s.Locations != nil || s.Title != "nosuch" {
		t.Errorf("unknown call started %+v", s)
	}
}

// The interceptors are asked in order and the first with a decision (to
// continue, a stop reason of its own, or a notice) decides.
func TestFirstInterceptorWithADecisionDecides(t *testing.T) {
	n := &session.Notice{Severity: session.SeverityInfo, Title: "checked"}
	for _, tc := range []struct {
		name   string
		ds     []agent.StopDecision
		stop   agent.StopReason
		notice bool
	}{
		{"a stop reason after none", []agent.StopDecision{{}, {Stop: "todo_incomplete"}}, "todo_incomplete", false},
		{"a notice before a stop reason", []agent.StopDecision{{Notice: n}, {Stop: "todo_incomplete"}}, agent.StopEndTurn, true},
		{"nothing", []agent.StopDecision{{}, {}}, agent.StopEndTurn, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, `[{"text":"done"}]`)
			var ics []agent.StopInterceptor
			for _, d := range tc.ds {
				ics = append(ics, interceptorFunc(func(context.Context, agent.StopInfo) agent.StopDecision { return d }))
			}
			res, err := h.engine(agent.Options{Interceptors: ics}).Run(t.Context(), userText("go"))
			if err != nil || res.Stop != tc.stop {
				t.Fatalf("res %+v err %v; want stop %s", res, err, tc.stop)
			}
			if got := len(noticesOf(h.rows())) == 1; got != tc.notice {
				t.Errorf("notice stored %v, want %v", got, tc.notice)
			}
		})
	}
}

// StopInfo.Run is distinct for every call of Run, counting up from 1.
func TestStopInfoRunCountsRuns(t *testing.T) {
	h := newHarness(t, `[{"text":"a"},{"text":"b"}]`)
	var runs []uint64
	e := h.engine(agent.Options{Interceptors: []agent.StopInterceptor{interceptorFunc(func(_ context.Context, info agent.StopInfo) agent.StopDecision {
		runs = append(runs, info.Run)
		return agent.StopDecision{}
	})}})
	for range 2 {
		if _, err := e.Run(t.Context(), userText("go")); err != nil {
			t.Fatal(err)
		}
	}
	if len(runs) != 2 || runs[0] != 1 || runs[1] != 2 {
		t.Errorf("runs %v, want [1 2]", runs)
	}
}

type recorderFunc func(ctx context.Context, info agent.RequestInfo) []session.Entry

func (f recorderFunc) RecordTools(ctx context.Context, info agent.RequestInfo) []session.Entry {
	return f(ctx, info)
}

// Tool recorders are asked before every request, told its round from 1.
func TestToolRecordersToldTheRound(t *testing.T) {
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work"}]},{"text":"done"}]`)
	var rounds []int
	e := h.engine(agent.Options{ToolRecorders: []agent.ToolRecorder{recorderFunc(func(_ context.Context, info agent.RequestInfo) []session.Entry {
		rounds = append(rounds, info.Round)
		return nil
	})}}, newTool("work", nil))
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 2 || rounds[0] != 1 || rounds[1] != 2 {
		t.Errorf("rounds %v, want [1 2]", rounds)
	}
}

// The inbox is not drained before a turn's first request: what waits
// there rides the request after the first round's results.
func TestInboxWaitsForTheFirstRound(t *testing.T) {
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work"}]},{"text":"done"}]`)
	pending := []model.Part{model.Text{Text: "also do this"}}
	e := h.engine(agent.Options{Inbox: func() []model.Part { p := pending; pending = nil; return p }}, newTool("work", nil))
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	reqs := h.prov.Requests()
	first := reqs[0].Messages
	if last := first[len(first)-1]; last.Text() != "go" {
		t.Errorf("first request ends with %q, want the input", last.Text())
	}
	second := reqs[1].Messages
	if last := second[len(second)-1]; last.Text() != "also do this" {
		t.Errorf("second request ends with %q, want the inbox's message", last.Text())
	}
}

// The note about an interrupted turn agrees in number with its calls.
func TestInterruptedNoteAgreesInNumber(t *testing.T) {
	for _, tc := range []struct {
		calls int
		want  string
	}{
		{1, "meka stopped while 1 tool call was running, so it may have partly run"},
		{2, "meka stopped while 2 tool calls were running, so they may have partly run"},
	} {
		h := newHarness(t, `[{"text":"fine"}]`)
		var parts model.Parts
		for i := range tc.calls {
			parts = append(parts, model.ToolCall{ID: fmt.Sprintf("lost%d", i), Name: "work", Arguments: json.RawMessage(`{}`)})
		}
		if _, err := h.store.Append(t.Context(), h.id, []session.Row{
			{Turn: 1, Entry: userText("x")}, {Turn: 1, Entry: session.AssistantMessage{Parts: parts}},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.engine(agent.Options{}, newTool("work", nil)).Run(t.Context(), userText("y")); err != nil {
			t.Fatal(err)
		}
		msgs := h.prov.Requests()[0].Messages
		if note := msgs[len(msgs)-2].Text(); !strings.Contains(note, tc.want) {
			t.Errorf("%d calls: note %q, want %q", tc.calls, note, tc.want)
		}
	}
}

// OrphanCalls reads a log whose first row is the assistant message.
func TestOrphanCallsFromTheFirstRow(t *testing.T) {
	rows := []session.Row{
		{Seq: 1, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: "a"}, model.ToolCall{ID: "b"}}}},
		{Seq: 2, Turn: 1, Entry: session.ToolResult{CallID: "a"}},
	}
	if got := agent.OrphanCalls(rows); len(got) != 1 || got[0].ID != "b" {
		t.Errorf("OrphanCalls = %+v, want [b]", got)
	}
}

// The view: a compaction's summary first even as the first row, results
// flagged as errors unless they succeeded, and the results of one round
// in one tool message.
func TestBuildView(t *testing.T) {
	call := func(id string) model.ToolCall { return model.ToolCall{ID: id, Name: "work"} }
	rows := []session.Row{
		{Seq: 1, Turn: 1, Entry: session.Compaction{Summary: "earlier", KeptFrom: 2}},
		{Seq: 2, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{call("a"), call("b")}}},
		{Seq: 3, Turn: 1, Entry: session.ToolResult{CallID: "a", Status: session.StatusOK}},
		{Seq: 4, Turn: 1, Entry: session.ToolResult{CallID: "b", Status: session.StatusError}},
		{Seq: 5, Turn: 1, Entry: session.Notice{Title: "for people"}},
		{Seq: 6, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{call("c")}}},
		{Seq: 7, Turn: 1, Entry: session.ToolResult{CallID: "c", Status: session.StatusRefused}},
	}
	v := agent.BuildView(rows)
	var roles []string
	for _, m := range v {
		roles = append(roles, string(m.Role))
	}
	if got := strings.Join(roles, ","); got != "user,assistant,tool,assistant,tool" {
		t.Fatalf("roles %s", got)
	}
	if !strings.HasSuffix(v[0].Text(), "earlier") {
		t.Errorf("summary message %q", v[0].Text())
	}
	var errs []bool
	for _, i := range []int{2, 4} {
		for _, p := range v[i].Parts {
			errs = append(errs, p.(model.ToolResult).IsError)
		}
	}
	if fmt.Sprint(errs) != "[false true true]" {
		t.Errorf("IsError of a, b, c = %v, want [false true true]", errs)
	}
	// A result with nothing before it still makes a tool message.
	if v := agent.BuildView(rows[2:3]); len(v) != 1 || v[0].Role != model.RoleTool {
		t.Errorf("view of a lone result %+v", v)
	}
}

// Withdraw refuses a session with no turn, and leaves none of the
// withdrawn turn's rows in the engine.
func TestWithdrawEdges(t *testing.T) {
	h := newHarness(t, `[{"text":"one"},{"text":"two"}]`)
	e := h.engine(agent.Options{})
	rewind := func(ctx context.Context, keep int64) error { return h.store.Rewind(ctx, h.id, keep) }
	if err := e.Withdraw(t.Context(), 0, rewind); !errors.Is(err, agent.ErrNotLastTurn) {
		t.Errorf("Withdraw(0) of an empty session = %v, want %v", err, agent.ErrNotLastTurn)
	}
	for _, in := range []string{"first", "second"} {
		if _, err := e.Run(t.Context(), userText(in)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Withdraw(t.Context(), 2, rewind); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.Rows() {
		if r.Turn != 1 {
			t.Errorf("the engine kept row %d of turn %d", r.Seq, r.Turn)
		}
	}
}

// An engine is not built over a log whose checkpoint a fold cannot
// restore: it would fold on from the wrong state.
func TestNewFailsOnAnUnrestorableCheckpoint(t *testing.T) {
	h := newHarness(t, `[]`)
	rows := []session.Row{
		{Seq: 1, Turn: 1, Entry: userText("x")},
		{Seq: 2, Turn: 1, Entry: session.Compaction{Summary: "s", KeptFrom: 1,
			Checkpoint: map[string]json.RawMessage{"count": json.RawMessage(`"not a count"`)}}},
	}
	_, err := agent.New(agent.Options{Provider: h.prov, Log: h, Folds: []session.Fold{&countFold{}}}, rows)
	if err == nil || !strings.Contains(err.Error(), "restore count") {
		t.Errorf("New = %v, want the restore error", err)
	}
}
