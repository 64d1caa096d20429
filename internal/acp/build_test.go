package acp

import (
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// TestNewSessionAnswersBeforeItsBuild: session/new answers while the
// session's engine is still being built, with its pickers; a prompt sent
// at once waits for the build and runs, after the session's
// announcements.
func TestNewSessionAnswersBeforeItsBuild(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`, build: func() error { <-release; return nil }})
	h.clearWire()
	created := make(chan NewSessionResponse, 1)
	go func() {
		var resp NewSessionResponse
		h.call("session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
		created <- resp
	}()
	var resp NewSessionResponse
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	select {
	case resp = <-created:
	case <-bound.C:
		close(release)
		t.Fatal("session/new waited for the session's engine")
	}
	if resp.SessionID == "" || resp.Modes == nil || resp.Modes.CurrentModeID != "workspace" || len(resp.ConfigOptions) != 3 ||
		resp.ConfigOptions[1].CurrentValue != "test" || resp.ConfigOptions[2].CurrentValue != false {
		t.Fatalf("session/new: %+v", resp)
	}
	prompted := make(chan PromptResponse, 1)
	go func() { prompted <- h.prompt(resp.SessionID, "hello") }()
	close(release)
	if r := <-prompted; r.StopReason != "end_turn" {
		t.Fatalf("prompt right after session/new: %+v", r)
	}
	kinds := h.wireKinds()
	commands, answered := slices.Index(kinds, "available_commands_update"), slices.Index(kinds, "agent_message_chunk")
	if kinds[0] != "response" || commands < 0 || answered < commands {
		t.Fatalf("on the wire: %v", kinds)
	}
}

// TestFailedBuildAnswersTheNextRequest: a session whose engine could not
// be built fails the next request naming it with the build's error, once;
// the stored session is left to be loaded.
func TestFailedBuildAnswersTheNextRequest(t *testing.T) {
	var builds atomic.Int32
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`, build: func() error {
		if builds.Add(1) == 1 {
			return errors.New("no tools today")
		}
		return nil
	}})
	var resp NewSessionResponse
	h.call("session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
	prompt := PromptRequest{SessionID: resp.SessionID, Prompt: []ContentBlock{TextBlock("hello")}}
	if e := h.callErr("session/prompt", prompt); e.Code != jsonrpc.InternalError || !strings.Contains(string(e.Data), "create session failed") {
		t.Fatalf("prompt after a failed build: %d %s %s", e.Code, e.Message, e.Data)
	}
	if e := h.callErr("session/prompt", prompt); e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "unknown session") {
		t.Fatalf("prompt once told: %d %s", e.Code, e.Message)
	}
	// The lock went with the failed build: the session loads.
	h.call("session/load", LoadSessionRequest{SessionID: resp.SessionID, Cwd: h.cwd, McpServers: []json.RawMessage{}}, nil)
	if r := h.prompt(resp.SessionID, "hello"); r.StopReason != "end_turn" {
		t.Fatalf("prompt after load: %+v", r)
	}
}

// whileHeld runs call, a request that must be answered while the host is
// still opening (harnessOptions.held), and returns its error; one that
// waits for the host fails the test, after a minute, instead of hanging.
func (h *harness) whileHeld(call func() error) error {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	select {
	case err := <-done:
		if h.srv.openHost() != nil {
			h.t.Fatal("the host opened while held")
		}
		return err
	case <-bound.C:
		h.letOpen()
		<-done
		h.t.Fatal("the request waited for the host to open")
		return nil
	}
}

// newWhileHeld makes a session/new that must be answered while the host
// is still opening.
func (h *harness) newWhileHeld() NewSessionResponse {
	h.t.Helper()
	var resp NewSessionResponse
	if err := h.whileHeld(func() error {
		return h.client.Call(h.t.Context(), "session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
	}); err != nil {
		h.t.Fatalf("session/new while the host opens: %v", err)
	}
	return resp
}

// TestNewSessionAnswersBeforeTheHostOpens: session/new is answered from
// the configuration while the host (its database) is still opening; the
// session is stored once it is open, and a prompt sent at once waits for
// that and runs, after the session's announcements.
func TestNewSessionAnswersBeforeTheHostOpens(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`, held: true})
	h.clearWire()
	resp := h.newWhileHeld()
	if resp.SessionID == "" || resp.Modes == nil || resp.Modes.CurrentModeID != "workspace" || len(resp.ConfigOptions) != 3 ||
		resp.ConfigOptions[1].CurrentValue != "test" || resp.ConfigOptions[2].CurrentValue != false {
		t.Fatalf("session/new: %+v", resp)
	}
	if _, err := h.db.Sessions().Get(t.Context(), resp.SessionID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("the session was stored before the host opened: %v", err)
	}
	prompted := make(chan PromptResponse, 1)
	go func() { prompted <- h.prompt(resp.SessionID, "hello") }()
	h.letOpen()
	if r := <-prompted; r.StopReason != "end_turn" {
		t.Fatalf("prompt right after session/new: %+v", r)
	}
	stored, err := h.db.Sessions().Get(t.Context(), resp.SessionID)
	if err != nil || stored.Cwd != h.cwd || stored.Profile != "test" || stored.Permission != "workspace" {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	kinds := h.wireKinds()
	commands, answered := slices.Index(kinds, "available_commands_update"), slices.Index(kinds, "agent_message_chunk")
	if kinds[0] != "response" || commands < 0 || answered < commands {
		t.Fatalf("on the wire: %v", kinds)
	}
}

// TestHostOpensAfterNewSession: with an admission, the host does not
// open after initialize, where it would compete with session/new for
// the machine, but once session/new is answered.
func TestHostOpensAfterNewSession(t *testing.T) {
	h := newHarness(t, harnessOptions{held: true})
	h.newWhileHeld()
	<-h.openAsked
	if !slices.Equal(h.wireAtOpen, []string{"response", "response"}) {
		t.Fatalf("the host started opening after %v, want the responses to initialize and session/new", h.wireAtOpen)
	}
}

// TestNewSessionRefusedBeforeTheHostOpens: what session/new refuses is
// refused while the host is still opening, as InvalidParams: the home
// directory as a workspace (without --workspace-home), a relative cwd, a
// system prompt meka cannot take.
func TestNewSessionRefusedBeforeTheHostOpens(t *testing.T) {
	home, _ := host.Canonical(t.TempDir())
	h := newHarness(t, harnessOptions{held: true, home: home})
	for _, c := range []struct {
		req  NewSessionRequest
		want string
	}{
		{NewSessionRequest{Cwd: home, McpServers: []json.RawMessage{}}, "--workspace-home"},
		{NewSessionRequest{Cwd: "relative", McpServers: []json.RawMessage{}}, "absolute"},
		{NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}, SystemPrompt: &SystemPrompt{Mode: "override"}}, "override"},
	} {
		err := h.whileHeld(func() error { return h.client.Call(t.Context(), "session/new", c.req, nil) })
		var e *jsonrpc.Error
		if !errors.As(err, &e) || e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, c.want) {
			t.Errorf("session/new in %s: %v, want InvalidParams saying %q", c.req.Cwd, err, c.want)
		}
	}
}

// TestFailedStoreAnswersTheNextRequest: a session answered before the
// host opened that cannot then be stored fails the next request naming
// it with the reason, once.
func TestFailedStoreAnswersTheNextRequest(t *testing.T) {
	h := newHarness(t, harnessOptions{held: true})
	resp := h.newWhileHeld()
	h.db.Close()
	h.letOpen()
	prompt := PromptRequest{SessionID: resp.SessionID, Prompt: []ContentBlock{TextBlock("hello")}}
	if e := h.callErr("session/prompt", prompt); e.Code != jsonrpc.InternalError || !strings.Contains(string(e.Data), "create session failed") {
		t.Fatalf("prompt after a failed store: %d %s %s", e.Code, e.Message, e.Data)
	}
	if e := h.callErr("session/prompt", prompt); e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "unknown session") {
		t.Fatalf("prompt once told: %d %s", e.Code, e.Message)
	}
}

// TestProjectPickerFollowsTheAnswer: a session answered before the host
// opened gets its project picker (which lists the database's projects)
// in a config_option_update, before anything of its first prompt; one
// answered once the host is open has it in the answer, and no update.
func TestProjectPickerFollowsTheAnswer(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"},{"text":"hi"}]`, held: true, projects: []string{"web"}})
	h.clearWire()
	resp := h.newWhileHeld()
	if len(resp.ConfigOptions) != 3 || slices.ContainsFunc(resp.ConfigOptions, func(o SessionConfigOption) bool { return o.ID == "project" }) {
		t.Fatalf("session/new before the host opened: %+v", resp.ConfigOptions)
	}
	prompted := make(chan PromptResponse, 1)
	go func() { prompted <- h.prompt(resp.SessionID, "hello") }()
	h.letOpen()
	if r := <-prompted; r.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v", r)
	}
	kinds := h.wireKinds()
	update, answered := slices.Index(kinds, "config_option_update"), slices.Index(kinds, "agent_message_chunk")
	if update < 0 || answered < update {
		t.Fatalf("on the wire: %v", kinds)
	}
	var got []SessionConfigOption
	for _, n := range h.take() {
		if u, ok := n.Update.(ConfigOptionUpdate); ok && n.SessionID == resp.SessionID {
			got = u.ConfigOptions
		}
	}
	ids := make([]string, len(got))
	for i, o := range got {
		ids[i] = o.ID
	}
	if !slices.Equal(ids, []string{"permission", "profile", "project", "approvals"}) || got[2].CurrentValue != noProject || len(got[2].Options) != 2 || got[2].Options[1].Value != "web" {
		t.Fatalf("config_option_update: %+v", got)
	}

	var second NewSessionResponse
	h.call("session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &second)
	if len(second.ConfigOptions) != 4 || second.ConfigOptions[2].ID != "project" {
		t.Fatalf("session/new once the host is open: %+v", second.ConfigOptions)
	}
	h.sync()
	for _, n := range h.take() {
		if _, ok := n.Update.(ConfigOptionUpdate); ok && n.SessionID == second.SessionID {
			t.Fatalf("a config_option_update for a session answered whole: %+v", n)
		}
	}
}

// TestRequestsRightAfterNewSession: requests naming a session sent as
// soon as session/new answered it, while the host still opens, wait for
// it to be stored and built: a listing shows it, load and close work on
// it, and a cancel stops a prompt waiting for it.
func TestRequestsRightAfterNewSession(t *testing.T) {
	t.Run("list", func(t *testing.T) {
		h := newHarness(t, harnessOptions{held: true})
		id := h.newWhileHeld().SessionID
		listed := make(chan ListSessionsResponse, 1)
		go func() {
			var l ListSessionsResponse
			h.call("session/list", ListSessionsRequest{}, &l)
			listed <- l
		}()
		h.letOpen()
		if l := <-listed; len(l.Sessions) != 1 || l.Sessions[0].SessionID != id {
			t.Fatalf("session/list: %+v", l)
		}
	})
	t.Run("load", func(t *testing.T) {
		h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`, held: true})
		id := h.newWhileHeld().SessionID
		loaded := make(chan error, 1)
		go func() {
			loaded <- h.client.Call(t.Context(), "session/load", LoadSessionRequest{SessionID: id, Cwd: h.cwd, McpServers: []json.RawMessage{}}, nil)
		}()
		h.letOpen()
		if err := <-loaded; err != nil {
			t.Fatalf("session/load: %v", err)
		}
		if r := h.prompt(id, "hello"); r.StopReason != "end_turn" {
			t.Fatalf("prompt after load: %+v", r)
		}
	})
	t.Run("close", func(t *testing.T) {
		h := newHarness(t, harnessOptions{held: true})
		id := h.newWhileHeld().SessionID
		closed := make(chan error, 1)
		go func() { closed <- h.client.Call(t.Context(), "session/close", SessionIDRequest{SessionID: id}, nil) }()
		h.letOpen()
		if err := <-closed; err != nil {
			t.Fatalf("session/close: %v", err)
		}
		if _, err := h.db.Sessions().Lock(t.Context(), id, session.Holder{Token: "another"}); err != nil {
			t.Fatalf("the lock after session/close: %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`, held: true})
		id := h.newWhileHeld().SessionID
		h.mu.Lock()
		from := len(h.wire)
		h.mu.Unlock()
		// One write: the prompt is read, and waits for the session, before
		// the cancel is read.
		if _, err := io.WriteString(h.rawW, `{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"`+id+`","prompt":[{"type":"text","text":"hello"}]}}`+"\n"+
			`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"`+id+`"}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		h.letOpen()
		line := h.awaitWire(from, func(l string) bool { return strings.Contains(l, `"id":"p1"`) })
		if !strings.Contains(line, `"stopReason":"cancelled"`) {
			t.Fatalf("the cancelled prompt: %s", line)
		}
	})
}
