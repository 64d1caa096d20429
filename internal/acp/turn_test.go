package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

func TestCancelMidTurn(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHarness(t, harnessOptions{
		rounds: `[{"tool_calls":[{"id":"c1","name":"wait"}]},{"text":"after"}]`,
		tools:  []tool.Tool{gateTool("wait", permission.Read, started, nil)},
	})
	id := h.newSession()
	type result struct {
		resp PromptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r PromptResponse
		err := h.client.Call(context.Background(), "session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("go")}}, &r)
		done <- result{r, err}
	}()
	<-started
	if err := h.client.Notify(t.Context(), "session/cancel", SessionIDRequest{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.resp.StopReason != "cancelled" {
		t.Fatalf("cancelled prompt: %+v %v", r.resp, r.err)
	}
	// The next prompt runs normally (the script's second round).
	if resp := h.prompt(id, "again"); resp.StopReason != "end_turn" {
		t.Fatalf("after a cancel: %+v", resp)
	}
	// A cancel with nothing in flight is discarded.
	if err := h.client.Notify(t.Context(), "session/cancel", SessionIDRequest{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if e := h.lookup(id); e.latched {
		t.Fatal("an idle cancel was latched")
	}
}

func (h *harness) lookup(id string) *entry {
	h.srv.awaitBuilds()
	e := h.srv.lookup(id)
	if e == nil {
		h.t.Fatalf("no entry for %s", id)
	}
	return e
}

// TestCancelRightAfterPrompt sends the cancel right behind the prompt, in
// the same write: whether it is latched before the turn starts or stops
// the running turn, the prompt answers cancelled.
func TestCancelRightAfterPrompt(t *testing.T) {
	rounds := strings.Repeat(`{"tool_calls":[{"id":"c","name":"wait"}]},`, 20)
	h := newHarness(t, harnessOptions{rounds: "[" + strings.TrimSuffix(rounds, ",") + "]",
		tools: []tool.Tool{gateTool("wait", permission.Read, nil, nil)}})
	id := h.newSession()
	for i := range 20 {
		prompt, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1000 + i, "method": "session/prompt",
			"params": PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("x")}}})
		cancel, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": SessionIDRequest{SessionID: id}})
		resp := h.raw(string(prompt) + "\n" + string(cancel) + "\n")
		if !strings.Contains(resp, `"stopReason":"cancelled"`) {
			t.Fatalf("round %d: %s", i, resp)
		}
	}
}

// TestLatch pins the latch itself: a prompt the reader has seen but whose
// handler has not started is cancelled as it starts; a cancel with nothing
// on its way is discarded. Where the id and sessionId sit in the line
// does not matter: a long prompt may put them last.
func TestLatch(t *testing.T) {
	a := newArrivals()
	long := strings.Repeat("x", 64<<10)
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`"p-1"`), Method: "session/prompt",
		Params: json.RawMessage(`{"prompt":[{"type":"text","text":"` + long + `"}],"sessionId":"s1"}`)})
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`2`), Method: "session/prompt", Params: json.RawMessage(`{"sessionId":"s2","prompt":[]}`)})
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`3`), Method: "session/load", Params: json.RawMessage(`{"sessionId":"s3"}`)})
	if a.latch("nobody") {
		t.Fatal("latched a session with no prompt on its way")
	}
	if !a.latch("s1") {
		t.Fatal("the prompt on its way was not found")
	}
	if !a.take(`"p-1"`).latched || a.take("2").latched || a.take(`"p-1"`).latched {
		t.Fatal("take: want the latched prompt once, and the other unlatched")
	}
	// A prompt read after a cancel is not latched by it, and knows the
	// cancel came first.
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`4`), Method: "session/prompt", Params: json.RawMessage(`{"sessionId":"s1","prompt":[]}`)})
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`5`), Method: "session/prompt", Params: json.RawMessage(`{"sessionId":"s2","prompt":[]}`)})
	t4, t5 := a.take("4"), a.take("5")
	if t4.latched || t4.cancelAt == 0 || t4.cancelAt > t4.seq || t5.cancelAt != 0 {
		t.Fatalf("tickets after a cancel: %+v %+v", t4, t5)
	}
}

// Cancels of sessions the client made up, never closed, are remembered
// only up to a bound, the latest kept: a client cannot grow the server's
// memory with them.
func TestCancelsBounded(t *testing.T) {
	a := newArrivals()
	for i := range 4 * maxArrivals {
		a.latch(fmt.Sprintf("made-up-%d", i))
	}
	a.arrived(&jsonrpc.Request{ID: json.RawMessage(`1`), Method: "session/prompt", Params: json.RawMessage(`{"sessionId":"s1","prompt":[]}`)})
	last := fmt.Sprintf("made-up-%d", 4*maxArrivals-1)
	a.latch(last)
	a.latch("s1")
	if n := len(a.cancels); n > maxArrivals {
		t.Fatalf("%d cancels remembered, want at most %d", n, maxArrivals)
	}
	if !a.cancelledSince(last, 1) || !a.take("1").latched {
		t.Fatal("the latest cancels were forgotten")
	}
}

func TestPermissionAnswers(t *testing.T) {
	rounds := `[
	 {"tool_calls":[{"id":"c1","name":"write","arguments":{"path":"a"}}]},{"text":"1"},
	 {"tool_calls":[{"id":"c1","name":"write","arguments":{"path":"b"}}]},{"text":"2"},
	 {"tool_calls":[{"id":"c1","name":"write","arguments":{"path":"c"}}]},{"text":"3"},
	 {"tool_calls":[{"id":"c1","name":"write","arguments":{"path":"d"}}]},{"text":"4"}]`
	var ran []string
	write := &fakeTool{spec: tool.Spec{Name: "write", Description: "w", Schema: json.RawMessage(`{"type":"object"}`), Level: permission.Workspace, Kind: tool.KindEdit},
		title: func(a json.RawMessage) string {
			var v struct{ Path string }
			_ = json.Unmarshal(a, &v)
			return "write " + v.Path
		},
		run: func(ctx context.Context, c tool.Call) (tool.Result, error) {
			ran = append(ran, string(c.Arguments))
			return tool.Text("ok"), nil
		}}
	h := newHarness(t, harnessOptions{rounds: rounds, tools: []tool.Tool{write},
		perms: host.Permissions{Default: permission.Read, Approvals: true}})
	id := h.newSession()
	answers := []string{"allow", "reject", "allow_always"}
	h.answer = func(p RequestPermissionRequest) RequestPermissionResponse {
		a := answers[0]
		answers = answers[1:]
		return RequestPermissionResponse{Outcome: PermissionOutcome{Outcome: "selected", OptionID: a}}
	}
	for range 4 {
		h.prompt(id, "write")
	}
	if len(h.asked) != 3 {
		t.Fatalf("asked %d times, want 3 (the sticky answer skips the 4th)", len(h.asked))
	}
	p := h.asked[0]
	if *p.ToolCall.Title != "write a" || len(p.Options) != 4 || p.Options[1].Name != "Always allow any write" || p.Options[3].Kind != "reject_always" {
		t.Fatalf("request: %+v", p)
	}
	if !strings.Contains(p.ToolCall.Content[0].Content.Text, "```json") || string(p.ToolCall.RawInput) != `{"path":"a"}` {
		t.Fatalf("request content: %+v", p.ToolCall)
	}
	// The prompt names the call's card, which went out before it.
	if p.ToolCall.ToolCallID != "c1" || h.asked[1].ToolCall.ToolCallID == "c1" {
		t.Fatalf("card ids: %s %s", p.ToolCall.ToolCallID, h.asked[1].ToolCall.ToolCallID)
	}
	if len(ran) != 3 || !strings.Contains(ran[1], `"c"`) {
		t.Fatalf("ran %v", ran)
	}
}

func TestPermissionCancelResolvesAtOnce(t *testing.T) {
	write := gateTool("write", permission.Workspace, nil, nil)
	h := newHarness(t, harnessOptions{rounds: `[{"tool_calls":[{"id":"c1","name":"write"}]},{"text":"x"}]`, tools: []tool.Tool{write},
		perms: host.Permissions{Default: permission.Read, Approvals: true}})
	id := h.newSession()
	asked := make(chan struct{})
	h.answer = nil // the client never answers
	go func() {
		for {
			h.mu.Lock()
			n := len(h.asked)
			h.mu.Unlock()
			if n > 0 {
				close(asked)
				return
			}
			h.sync()
		}
	}()
	done := make(chan PromptResponse, 1)
	go func() {
		var r PromptResponse
		_ = h.client.Call(context.Background(), "session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("go")}}, &r)
		done <- r
	}()
	<-asked
	if err := h.client.Notify(t.Context(), "session/cancel", SessionIDRequest{SessionID: id}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.StopReason != "cancelled" {
		t.Fatalf("%+v", r)
	}
	// The call is recorded and shown as cancelled, never as the user's
	// denial.
	var res session.ToolResult
	for _, r := range h.lookup(id).session().Engine().Rows() {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			res = tr
		}
	}
	if res.Status != session.StatusCanceled || strings.Contains(resultText(res), "denied") {
		t.Fatalf("the call pending a permission when cancelled: %s %q", res.Status, resultText(res))
	}
	for _, n := range h.take() {
		if u, ok := n.Update.(ToolCallUpdate); ok && (u.Status == "failed" || strings.Contains(string(u.RawOutput), "denied")) {
			t.Fatalf("the cancelled call was reported as %+v", u)
		}
	}
}

func TestEditThroughEditor(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"c1","name":"file_edit","arguments":{"path":"proj/a.txt","old":"buffer","new":"edited"}}]},{"text":"1"},
	 {"tool_calls":[{"id":"c2","name":"file_edit","arguments":{"path":"other.txt","old":"disk","new":"changed"}}]},{"text":"2"}]`
	h := newHarness(t, harnessOptions{rounds: rounds, fileTools: true,
		init: &InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{FS: FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}}})
	proj := filepath.Join(h.cwd, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "a.txt"), []byte("disk\n"), 0o644)
	os.WriteFile(filepath.Join(h.cwd, "other.txt"), []byte("disk\n"), 0o644)
	h.buffers[filepath.Join(proj, "a.txt")] = "buffer\n"
	h.served = func(p string) bool { return strings.HasPrefix(p, proj+"/") }
	id := h.newSession()
	h.sync()
	h.take()
	h.prompt(id, "edit")
	if got := h.buffers[filepath.Join(proj, "a.txt")]; got != "edited\n" {
		t.Fatalf("buffer %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "a.txt")); string(b) != "disk\n" {
		t.Fatalf("the disk changed under the editor: %q", b)
	}
	var diff *ToolCallContent
	for _, n := range h.take() {
		if u, ok := n.Update.(ToolCallUpdate); ok && u.Status == "completed" {
			for i := range u.Content {
				if u.Content[i].Type == "diff" {
					diff = &u.Content[i]
				}
			}
		}
	}
	if diff == nil || diff.Path != filepath.Join(proj, "a.txt") || *diff.OldText != "buffer\n" || *diff.NewText != "edited\n" {
		t.Fatalf("diff content: %+v", diff)
	}
	h.prompt(id, "edit other")
	if b, _ := os.ReadFile(filepath.Join(h.cwd, "other.txt")); string(b) != "changed\n" {
		t.Fatalf("fallback edit on disk: %q", b)
	}
	rows := h.lookup(id).session().Engine().Rows()
	var last session.ToolResult
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			last = tr
		}
	}
	if !strings.Contains(resultText(last), "written on disk") {
		t.Fatalf("the fallback is not disclosed: %q", resultText(last))
	}
}

// TestPromptRightAfterCancel is what an editor does when the user types
// after Stop: the cancel and the next prompt in one write, with the turn
// still running. The cancelled turn answers cancelled, and the next prompt
// is accepted, queued behind it: it runs (never refused as busy, never
// cancelled by the cancel before it), its updates after the first
// response.
func TestPromptRightAfterCancel(t *testing.T) {
	const n = 5
	rounds := strings.Repeat(`{"tool_calls":[{"id":"c","name":"wait"}]},{"text":"next"},`, n)
	started := make(chan struct{}, 1)
	h := newHarness(t, harnessOptions{rounds: "[" + strings.TrimSuffix(rounds, ",") + "]",
		tools: []tool.Tool{gateTool("wait", permission.Read, started, nil)}})
	id := h.newSession()
	for i := range n {
		first := make(chan string, 1)
		go func() {
			var r PromptResponse
			if err := h.client.Call(context.Background(), "session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("wait")}}, &r); err != nil {
				first <- err.Error()
				return
			}
			first <- r.StopReason
		}()
		<-started
		cancel, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": SessionIDRequest{SessionID: id}})
		next, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2000 + i, "method": "session/prompt",
			"params": PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("typed after stop")}}})
		resp := h.rawResponse(string(cancel)+"\n"+string(next)+"\n", fmt.Sprint(2000+i))
		if !strings.Contains(resp, `"stopReason":"end_turn"`) {
			t.Fatalf("round %d: the prompt after the cancel answered %s", i, resp)
		}
		if got := <-first; got != "cancelled" {
			t.Fatalf("round %d: the cancelled prompt answered %s", i, got)
		}
	}
}

// rawResponse writes lines straight to the server and returns its
// response to the request with the given id.
func (h *harness) rawResponse(lines, id string) string {
	h.t.Helper()
	h.mu.Lock()
	before := len(h.wire)
	h.mu.Unlock()
	if _, err := io.WriteString(h.rawW, lines); err != nil {
		h.t.Fatal(err)
	}
	for {
		h.sync()
		h.mu.Lock()
		for _, l := range h.wire[before:] {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.Method == "" && string(m.ID) == id {
				h.mu.Unlock()
				return l
			}
		}
		h.mu.Unlock()
	}
}
