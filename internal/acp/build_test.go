package acp

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/internal/acp/jsonrpc"
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
