package acp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestInitializeAdvertises(t *testing.T) {
	h := newHarness(t, harnessOptions{opts: Options{Vision: true}})
	var resp InitializeResponse
	h.call("initialize", InitializeRequest{ProtocolVersion: 1}, &resp)
	if resp.ProtocolVersion != 1 || !resp.AgentCapabilities.LoadSession || resp.AgentInfo.Name != "meka" {
		t.Fatalf("initialize: %+v", resp)
	}
	sc := resp.AgentCapabilities.SessionCapabilities
	if sc.List == nil || sc.Resume == nil || sc.Fork == nil || sc.Close == nil || sc.AdditionalDirectories == nil {
		t.Fatalf("session capabilities: %+v", sc)
	}
	pc := resp.AgentCapabilities.PromptCapabilities
	if !pc.Image || !pc.EmbeddedContext || pc.Audio {
		t.Fatalf("prompt capabilities: %+v", pc)
	}
}

func TestNewSessionOrdersUpdatesAfterResponse(t *testing.T) {
	h := newHarness(t, harnessOptions{window: 1000})
	h.clearWire()
	var resp NewSessionResponse
	h.call("session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
	h.sync()
	got := h.wireKinds()
	if len(got) == 0 || got[0] != "response" {
		t.Fatalf("an update went out before the session/new response: %v", got)
	}
	if !slices.Contains(got, "available_commands_update") || !slices.Contains(got, "usage_update") {
		t.Fatalf("after session/new: %v", got)
	}
	if resp.Modes == nil || resp.Modes.CurrentModeID != "workspace" || len(resp.ConfigOptions) != 3 {
		t.Fatalf("session/new: %+v", resp)
	}
	ids := []string{resp.ConfigOptions[0].ID, resp.ConfigOptions[1].ID, resp.ConfigOptions[2].ID}
	if !slices.Equal(ids, []string{"permission", "profile", "approvals"}) || resp.ConfigOptions[0].Category != "mode" || resp.ConfigOptions[1].Category != "model" || resp.ConfigOptions[2].Type != "boolean" {
		t.Fatalf("config options: %+v", resp.ConfigOptions)
	}
}

func TestNewSessionRefusesBadCwd(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, cwd := range []string{"relative/dir", h.cwd + "/missing"} {
		if e := h.callErr("session/new", NewSessionRequest{Cwd: cwd, McpServers: []json.RawMessage{}}); e.Code != -32602 {
			t.Errorf("cwd %q: %d %s", cwd, e.Code, e.Message)
		}
	}
	if e := h.callErr("session/new", NewSessionRequest{Cwd: h.cwd, AdditionalDirectories: []string{"rel"}, McpServers: []json.RawMessage{}}); e.Code != -32602 {
		t.Errorf("relative additional directory: %d", e.Code)
	}
}

func TestPromptStreamsAndAnswers(t *testing.T) {
	h := newHarness(t, harnessOptions{window: 1000, rounds: `[{"thinking":"hmm","text":"Hello there, friend.","usage":{"input_tokens":10,"output_tokens":5,"cache_read_tokens":2}}]`})
	id := h.newSession()
	h.sync()
	h.take()
	resp := h.prompt(id, "say hi")
	if resp.StopReason != "end_turn" || resp.Usage == nil || resp.Usage.TotalTokens != 17 || *resp.Usage.CachedReadTokens != 2 {
		t.Fatalf("prompt response: %+v", resp)
	}
	ups := h.take()
	var text, thought string
	for _, u := range ups {
		if c, ok := u.Update.(ContentChunk); ok {
			switch c.Tag {
			case TagAgentMessage:
				text += c.Content.Text
			case TagAgentThought:
				thought += c.Content.Text
			}
		}
	}
	if text != "Hello there, friend." || thought != "hmm" {
		t.Fatalf("streamed %q / %q: %v", text, thought, tags(ups))
	}
	got := tags(ups)
	if got[0] != "available_commands_update" || !slices.Contains(got, "session_info_update") || !slices.Contains(got, "usage_update") {
		t.Fatalf("updates: %v", got)
	}
	// Every update of the turn is on the wire before the response.
	kinds := h.wireKinds()
	if kinds[len(kinds)-1] != "response" {
		t.Fatalf("the prompt response is not last: %v", kinds)
	}
}

func TestUnknownSessionAndBusy(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	if e := h.callErr("session/prompt", PromptRequest{SessionID: "nope", Prompt: []ContentBlock{TextBlock("x")}}); e.Code != -32602 {
		t.Fatalf("unknown session: %d", e.Code)
	}
	if e := h.callErr("session/nonexistent", map[string]any{}); e.Code != -32601 {
		t.Fatalf("unknown method: %d", e.Code)
	}
	if e := h.callErr("session/prompt", map[string]any{"sessionId": 7, "prompt": "x"}); e.Code != -32602 {
		t.Fatalf("wrong param types: %d", e.Code)
	}
}

func TestLocalCommands(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	h.sync()
	h.take()
	resp := h.prompt(id, "/status")
	if resp.StopReason != "end_turn" || resp.Usage.TotalTokens != 0 {
		t.Fatalf("/status: %+v", resp)
	}
	var text string
	for _, u := range h.take() {
		if c, ok := u.Update.(ContentChunk); ok {
			text += c.Content.Text
		}
	}
	if !strings.HasPrefix(text, "Permission: workspace\nProfile: test") {
		t.Fatalf("/status said %q", text)
	}
	if h.prov.Remaining() != 0 || len(h.prov.Requests()) != 0 {
		t.Fatal("/status called the model")
	}
	e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("/mcp"), {Type: "image", MimeType: "image/png", Data: "AAAA"}}})
	if e.Code != -32602 {
		t.Fatalf("/mcp with an image: %d", e.Code)
	}
}
