package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// fakeTool is a func-field tool for engine tests.
type fakeTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	if f.run == nil {
		return tool.Text("ok"), nil
	}
	return f.run(ctx, c)
}

const objSchema = `{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`

func newTool(name string, mod func(*tool.Spec)) *fakeTool {
	t := &fakeTool{spec: tool.Spec{Name: name, Description: name, Schema: json.RawMessage(objSchema), Level: permission.Read, Kind: tool.KindOther}}
	if mod != nil {
		mod(&t.spec)
	}
	return t
}

// harness is one session on a real SQLite file.
type harness struct {
	t     testing.TB
	store session.Store
	id    string
	prov  *script.Provider
}

func newHarness(t testing.TB, rounds string) *harness {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := db.Sessions()
	m, err := store.Create(t.Context(), session.Meta{Cwd: t.TempDir(), Permission: "workspace"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: store, id: m.ID, prov: script.New(s)}
}

func (h *harness) Append(ctx context.Context, rows []session.Row) ([]session.Row, error) {
	return h.store.Append(ctx, h.id, rows)
}

func (h *harness) rows() []session.Row {
	h.t.Helper()
	rows, err := h.store.Rows(context.Background(), h.id, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return rows
}

func (h *harness) engine(opts agent.Options, tools ...tool.Tool) *agent.Engine {
	h.t.Helper()
	opts.Provider = h.prov
	opts.Log = h
	opts.SessionID = h.id
	if opts.Tools == nil {
		opts.Tools = tool.NewRegistry()
	}
	if err := opts.Tools.Add(tools...); err != nil {
		h.t.Fatal(err)
	}
	e, err := agent.New(opts, h.rows())
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func userText(s string) session.UserMessage {
	return session.UserMessage{Parts: model.Parts{model.Text{Text: s}}}
}

// interceptorFunc adapts a function to agent.StopInterceptor.
type interceptorFunc func(ctx context.Context, info agent.StopInfo) agent.StopDecision

func (f interceptorFunc) BeforeStop(ctx context.Context, info agent.StopInfo) agent.StopDecision {
	return f(ctx, info)
}

func results(rows []session.Row) []session.ToolResult {
	var out []session.ToolResult
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			out = append(out, tr)
		}
	}
	return out
}

func resultText(tr session.ToolResult) string {
	var b strings.Builder
	for _, p := range tr.Content {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestInterceptorAskedOnlyOnNormalEnd(t *testing.T) {
	cases := []struct {
		name   string
		rounds string
		want   agent.StopReason
		asked  int
	}{
		{"end_turn", `[{"text":"done"}]`, agent.StopEndTurn, 1},
		{"max_tokens", `[{"text":"cut","stop":"max_tokens"}]`, agent.StopMaxTokens, 0},
		{"refusal", `[{"text":"no","stop":"refusal"}]`, agent.StopRefusal, 0},
		{"failed", `[{"error":{"status":400,"body":"bad request"}}]`, agent.StopFailed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.rounds)
			asked := 0
			e := h.engine(agent.Options{Interceptors: []agent.StopInterceptor{interceptorFunc(func(context.Context, agent.StopInfo) agent.StopDecision {
				asked++
				return agent.StopDecision{}
			})}})
			res, _ := e.Run(t.Context(), userText("hi"))
			if res.Stop != tc.want || asked != tc.asked {
				t.Fatalf("stop %s asked %d, want %s asked %d", res.Stop, asked, tc.want, tc.asked)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		h := newHarness(t, `[{"tool_calls":[{"id":"c1","name":"block"}]},{"text":"never"}]`)
		asked := 0
		ctx, cancel := context.WithCancel(t.Context())
		block := newTool("block", func(s *tool.Spec) {})
		block.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
			cancel()
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		}
		e := h.engine(agent.Options{Interceptors: []agent.StopInterceptor{interceptorFunc(func(context.Context, agent.StopInfo) agent.StopDecision {
			asked++
			return agent.StopDecision{}
		})}}, block)
		res, err := e.Run(ctx, userText("hi"))
		if err != nil || res.Stop != agent.StopCanceled || asked != 0 {
			t.Fatalf("stop %s err %v asked %d", res.Stop, err, asked)
		}
	})
}

func TestInterceptorContinuesTurn(t *testing.T) {
	h := newHarness(t, `[{"text":"first"},{"text":"second"}]`)
	n := 0
	e := h.engine(agent.Options{Interceptors: []agent.StopInterceptor{interceptorFunc(func(context.Context, agent.StopInfo) agent.StopDecision {
		n++
		if n == 1 {
			return agent.StopDecision{Continue: true, Message: "not yet", Notice: &session.Notice{Severity: session.SeverityInfo, Title: "nudge"}}
		}
		return agent.StopDecision{}
	})}})
	res, err := e.Run(t.Context(), userText("hi"))
	if err != nil || res.Stop != agent.StopEndTurn || res.Reply != "second" {
		t.Fatalf("res %+v err %v", res, err)
	}
	reqs := h.prov.Requests()
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if last.Role != model.RoleUser || last.Text() != "not yet" {
		t.Fatalf("second request ends with %+v", last)
	}
	var kinds []string
	for _, r := range h.rows() {
		kinds = append(kinds, r.Entry.Kind())
	}
	if got := strings.Join(kinds, ","); got != "user,assistant,notice,user,assistant" {
		t.Fatalf("rows %s", got)
	}
}

func TestBookkeepingRefund(t *testing.T) {
	plan := newTool("plan", func(s *tool.Spec) { s.Bookkeeping = true })
	work := newTool("work", nil)
	rounds := `[{"tool_calls":[{"id":"a","name":"plan"}]},{"tool_calls":[{"id":"b","name":"plan"}]},{"tool_calls":[{"id":"c","name":"plan"}]},{"tool_calls":[{"id":"d","name":"work"}]},{"text":"done"}]`
	t.Run("bookkeeping rounds are free", func(t *testing.T) {
		h := newHarness(t, rounds)
		e := h.engine(agent.Options{MaxTurns: 2}, plan, work)
		res, err := e.Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopEndTurn || res.Rounds != 5 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
	t.Run("other rounds count", func(t *testing.T) {
		h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work","arguments":{"n":1}}]},{"tool_calls":[{"id":"b","name":"work","arguments":{"n":2}}]},{"text":"done"}]`)
		e := h.engine(agent.Options{MaxTurns: 2}, plan, work)
		res, err := e.Run(t.Context(), userText("go"))
		if err != nil || res.Stop != agent.StopMaxTurns || res.Rounds != 2 {
			t.Fatalf("res %+v err %v", res, err)
		}
	})
}

func TestRepeatGuard(t *testing.T) {
	ran := 0
	work := newTool("work", nil)
	work.run = func(context.Context, tool.Call) (tool.Result, error) { ran++; return tool.Text("same"), nil }
	plan := newTool("plan", func(s *tool.Spec) { s.Bookkeeping = true })
	// The same work call four times, with bookkeeping calls between them:
	// they must neither count nor break the run.
	rounds := `[
	 {"tool_calls":[{"id":"1","name":"work","arguments":{"n":1}}]},
	 {"tool_calls":[{"id":"p1","name":"plan"},{"id":"2","name":"work","arguments":{"n":1}}]},
	 {"tool_calls":[{"id":"p2","name":"plan"}]},
	 {"tool_calls":[{"id":"3","name":"work","arguments":{"n":1}}]},
	 {"tool_calls":[{"id":"4","name":"work","arguments":{"n":1}}]},
	 {"text":"unreachable"}]`
	h := newHarness(t, rounds)
	e := h.engine(agent.Options{}, work, plan)
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != agent.StopRepeat {
		t.Fatalf("res %+v err %v", res, err)
	}
	if ran != 2 {
		t.Fatalf("work ran %d times, want 2 (third warned, fourth stopped)", ran)
	}
	byID := map[string]session.ToolResult{}
	for _, tr := range results(h.rows()) {
		byID[tr.CallID] = tr
	}
	if tr := byID["3"]; tr.Status != session.StatusRefused || !strings.Contains(resultText(tr), "3 times in a row") {
		t.Fatalf("third call: %+v", tr)
	}
	if tr := byID["4"]; tr.Status != session.StatusRefused {
		t.Fatalf("fourth call: %+v", tr)
	}
}

func TestInvalidArgumentsTellTheModel(t *testing.T) {
	work := newTool("work", nil)
	ran := false
	work.run = func(context.Context, tool.Call) (tool.Result, error) { ran = true; return tool.Text("x"), nil }
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"work","arguments":{"n":"three"}}]},{"tool_calls":[{"id":"b","name":"nosuch"}]},{"text":"ok"}]`)
	e := h.engine(agent.Options{}, work)
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("res %+v err %v", res, err)
	}
	if ran {
		t.Fatal("tool ran with invalid arguments")
	}
	rs := results(h.rows())
	if len(rs) != 2 || rs[0].Status != session.StatusRefused || !strings.Contains(resultText(rs[0]), "/n") {
		t.Fatalf("invalid args result: %+v", rs)
	}
	if !strings.Contains(resultText(rs[1]), `no tool called "nosuch"`) || !strings.Contains(resultText(rs[1]), "work") {
		t.Fatalf("unknown tool result: %q", resultText(rs[1]))
	}
	// The model was sent both refusals.
	req := h.prov.Requests()[2]
	if n := len(req.Messages); req.Messages[n-1].Role != model.RoleTool {
		t.Fatalf("last message %+v", req.Messages[n-1])
	}
}

func TestCancelMidToolLeavesConsistentLog(t *testing.T) {
	started := make(chan struct{})
	quickDone := make(chan struct{})
	block := newTool("block", func(s *tool.Spec) { s.ParallelSafe = true })
	block.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
		<-quickDone // the cancel lands after the quick call finished
		close(started)
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	}
	quick := newTool("quick", func(s *tool.Spec) { s.ParallelSafe = true })
	quick.run = func(context.Context, tool.Call) (tool.Result, error) {
		close(quickDone)
		return tool.Text("ok"), nil
	}
	h := newHarness(t, `[{"text":"working","tool_calls":[{"id":"q","name":"quick"},{"id":"b","name":"block"}]},{"text":"after resume"}]`)
	e := h.engine(agent.Options{}, block, quick)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	res, err := e.Run(ctx, userText("go"))
	if err != nil || res.Stop != agent.StopCanceled {
		t.Fatalf("res %+v err %v", res, err)
	}
	rows := h.rows()
	if orphans := agent.OrphanCalls(rows); len(orphans) != 0 {
		t.Fatalf("orphan calls after cancel: %+v", orphans)
	}
	rs := results(rows)
	if len(rs) != 2 || rs[0].CallID != "q" || rs[0].Status != session.StatusOK || rs[1].Status != session.StatusCanceled {
		t.Fatalf("results %+v", rs)
	}
	// A fresh engine on the same log continues.
	e2 := h.engine(agent.Options{}, newTool("block", nil), newTool("quick", nil))
	res, err = e2.Run(t.Context(), userText("again"))
	if err != nil || res.Reply != "after resume" || res.Turn != 2 {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestOrphanCallsClosedOnNextTurn(t *testing.T) {
	h := newHarness(t, `[{"text":"fine"}]`)
	// A crash left a call without its result.
	_, err := h.store.Append(t.Context(), h.id, []session.Row{
		{Turn: 1, Entry: userText("x")},
		{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: "lost", Name: "work", Arguments: json.RawMessage(`{}`)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := h.engine(agent.Options{}, newTool("work", nil))
	if _, err := e.Run(t.Context(), userText("y")); err != nil {
		t.Fatal(err)
	}
	rs := results(h.rows())
	if len(rs) != 1 || rs[0].CallID != "lost" || rs[0].Status != session.StatusInterrupted || resultText(rs[0]) != agent.InterruptedResult {
		t.Fatalf("results %+v", rs)
	}
	// The model hears it in the call's result and once in the context,
	// with the call named, before the new input.
	msgs := h.prov.Requests()[0].Messages
	if len(msgs) != 5 || msgs[2].Role != model.RoleTool || msgs[4].Text() != "y" {
		t.Fatalf("request %+v", msgs)
	}
	if note := msgs[3].Text(); msgs[3].Role != model.RoleUser || !strings.Contains(note, "interrupted") || !strings.Contains(note, "work (lost)") {
		t.Fatalf("context note %+v", msgs[3])
	}
	if n := noticesOf(h.rows()); len(n) != 1 || n[0].Title != "The last turn was interrupted" {
		t.Fatalf("notices %+v", n)
	}
	// Closed once: a second run finds nothing to close.
	if closed, err := e.Recover(t.Context()); err != nil || len(closed) != 0 {
		t.Fatalf("second recover: %v %v", closed, err)
	}
}

// Persist first: the assistant message with its calls is in the log
// before any call runs, and each call's result is stored before the next
// call starts, so a crash at any point leaves no effect without its call.
func TestCallsStoredBeforeTheyRun(t *testing.T) {
	h := newHarness(t, `[{"text":"writing","tool_calls":[{"id":"w1","name":"write"},{"id":"w2","name":"write"}]},{"text":"done"}]`)
	var seen [][]string // per run: the call ids with results in the log, and whether the call itself was there
	write := newTool("write", nil)
	write.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
		rows := h.rows()
		var called bool
		var answered []string
		for _, r := range rows {
			switch e := r.Entry.(type) {
			case session.AssistantMessage:
				for _, p := range e.Parts {
					if tc, ok := p.(model.ToolCall); ok {
						called = called || tc.ID == c.ID
					}
				}
			case session.ToolResult:
				answered = append(answered, e.CallID)
			}
		}
		if !called {
			t.Errorf("%s ran before its call was stored", c.ID)
		}
		seen = append(seen, answered)
		return tool.Text("wrote"), nil
	}
	e := h.engine(agent.Options{}, write)
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || len(seen[0]) != 0 || len(seen[1]) != 1 || seen[1][0] != "w1" {
		t.Fatalf("results stored when each call ran: %v", seen)
	}
}

func noticesOf(rows []session.Row) []session.Notice {
	var out []session.Notice
	for _, r := range rows {
		if n, ok := r.Entry.(session.Notice); ok {
			out = append(out, n)
		}
	}
	return out
}

func TestParallelResultsInCallOrder(t *testing.T) {
	var mu sync.Mutex
	release := make(chan struct{})
	arrived := 0
	slow := newTool("slow", func(s *tool.Spec) { s.ParallelSafe = true })
	slow.run = func(ctx context.Context, c tool.Call) (tool.Result, error) {
		mu.Lock()
		arrived++
		if arrived == 3 {
			close(release) // all three run at once, or this never fires
		}
		mu.Unlock()
		<-release
		return tool.Text("r" + c.ID), nil
	}
	h := newHarness(t, `[{"tool_calls":[{"id":"1","name":"slow","arguments":{"n":1}},{"id":"2","name":"slow","arguments":{"n":2}},{"id":"3","name":"slow","arguments":{"n":3}}]},{"text":"done"}]`)
	e := h.engine(agent.Options{}, slow)
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range results(h.rows()) {
		got = append(got, resultText(tr))
	}
	if strings.Join(got, ",") != "r1,r2,r3" {
		t.Fatalf("results %v", got)
	}
}

func TestGateRefusesAboveLevel(t *testing.T) {
	write := newTool("write", func(s *tool.Spec) { s.Level = permission.Workspace })
	ran := false
	write.run = func(context.Context, tool.Call) (tool.Result, error) { ran = true; return tool.Text("x"), nil }
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"write"}]},{"text":"ok"}]`)
	level := permission.Read
	e := h.engine(agent.Options{Gate: &tool.Gate{Level: func() permission.Level { return level }}}, write)
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	rs := results(h.rows())
	if ran || rs[0].Status != session.StatusRefused || !strings.Contains(resultText(rs[0]), "needs the workspace permission level") {
		t.Fatalf("ran %v result %+v", ran, rs[0])
	}
}

func TestProviderFailureIsStoredAsNotice(t *testing.T) {
	long := strings.Repeat("x", 10000)
	h := newHarness(t, fmt.Sprintf(`[{"error":{"status":400,"body":%q}}]`, long))
	e := h.engine(agent.Options{})
	res, err := e.Run(t.Context(), userText("go"))
	var perr *model.Error
	if res.Stop != agent.StopFailed || !errors.As(err, &perr) {
		t.Fatalf("res %+v err %v", res, err)
	}
	rows := h.rows()
	n, ok := rows[len(rows)-1].Entry.(session.Notice)
	if !ok || n.Severity != session.SeverityError || len(n.Description) > model.DisplayCap+100 || !strings.Contains(n.Description, "more bytes cut") {
		t.Fatalf("notice %+v", rows[len(rows)-1].Entry)
	}
}

// A message sent mid-turn rides the reminder of a continued turn the way
// it rides a tool round's results.
func TestSteerRidesTheNudge(t *testing.T) {
	h := newHarness(t, `[{"text":"done?"},{"text":"now done"}]`)
	var inbox []model.Part
	n := 0
	e := h.engine(agent.Options{
		Inbox: func() []model.Part { p := inbox; inbox = nil; return p },
		Interceptors: []agent.StopInterceptor{interceptorFunc(func(context.Context, agent.StopInfo) agent.StopDecision {
			n++
			if n == 1 {
				inbox = append(inbox, model.Text{Text: "also update the docs"})
				return agent.StopDecision{Continue: true, Message: "1 item is open"}
			}
			return agent.StopDecision{}
		})},
	})
	if _, err := e.Run(t.Context(), userText("go")); err != nil {
		t.Fatal(err)
	}
	msgs := h.prov.Requests()[1].Messages
	k := len(msgs)
	if msgs[k-2].Text() != "1 item is open" || msgs[k-1].Text() != "also update the docs" {
		t.Fatalf("second request ends with %q, %q", msgs[k-2].Text(), msgs[k-1].Text())
	}
}

// A message sent while the model writes its last reply is not dropped:
// the turn gets one more round carrying it.
func TestSteerDuringTheLastReplyGetsARound(t *testing.T) {
	h := newHarness(t, `[{"text":"done"},{"text":"and hello"}]`)
	var sent bool
	e := h.engine(agent.Options{Inbox: func() []model.Part {
		if sent || len(h.prov.Requests()) == 0 {
			return nil
		}
		sent = true
		return model.Parts{model.Text{Text: "also say hello"}}
	}})
	res, err := e.Run(t.Context(), userText("go"))
	if err != nil || res.Reply != "and hello" {
		t.Fatalf("res %+v err %v", res, err)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Text() != "also say hello" {
		t.Fatalf("%d requests", len(reqs))
	}
}

// Prelude runs once, before the first turn's input is stored: its system
// prompt is what every request carries and its entries are recorded at the
// turn before. A failed prelude fails that turn and is tried again.
func TestPrelude(t *testing.T) {
	h := newHarness(t, `[{"text":"one"},{"text":"two"}]`)
	calls := 0
	e := h.engine(agent.Options{System: "placeholder", Prelude: func(context.Context) (string, []session.Entry, error) {
		calls++
		if calls == 1 {
			return "", nil, errors.New("git is gone")
		}
		return "the real prompt", []session.Entry{session.SystemPrompt{Text: "the real prompt", Cwd: "/w"}}, nil
	}})
	if _, err := e.Run(t.Context(), userText("hi")); err == nil || !strings.Contains(err.Error(), "git is gone") {
		t.Fatalf("a failed prelude: %v", err)
	}
	if rows := h.rows(); len(rows) != 0 {
		t.Fatalf("a failed prelude stored %d rows", len(rows))
	}
	for _, msg := range []string{"hi", "again"} {
		if _, err := e.Run(t.Context(), userText(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 {
		t.Errorf("prelude called %d times, want 2 (a failure, then once)", calls)
	}
	for i, r := range h.prov.Requests() {
		if r.System != "the real prompt" {
			t.Errorf("request %d system %q", i, r.System)
		}
	}
	rows := h.rows()
	sp, ok := rows[0].Entry.(session.SystemPrompt)
	if !ok || sp.Text != "the real prompt" || rows[0].Turn != 0 {
		t.Fatalf("first row %+v", rows[0])
	}
	if u, ok := rows[1].Entry.(session.UserMessage); !ok || rows[1].Turn != 1 || u.Parts[0].(model.Text).Text != "hi" {
		t.Fatalf("second row %+v", rows[1])
	}
}
