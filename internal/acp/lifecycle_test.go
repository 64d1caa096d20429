package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/bmp"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// TestLoadReplaysTheLog pins how a stored log replays: messages as
// chunks, calls and their results (a change as a diff block), notices,
// a compaction where it happened, reminders never, and a call the log
// left without a result closed as failed.
func TestLoadReplaysTheLog(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	rows := []session.Row{
		{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "look at "}, model.Resource{URI: "file:///p/a.go", Name: "a.go", Text: "package a"}}}},
		{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "finish the checklist"}}, Source: session.SourceReminder}},
		{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.Thinking{Text: "hmm"}, model.Text{Text: "Editing."},
			model.ToolCall{ID: "c1", Name: "file_edit", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}},
		{Turn: 1, Entry: session.ToolResult{CallID: "c1", Name: "file_edit", Status: session.StatusOK, Change: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-a\n+b\n",
			Content: model.Parts{model.Text{Text: "Edited a.go"}}}},
		{Turn: 1, Entry: session.Notice{Severity: session.SeverityWarning, Title: "A write was lost"}},
		{Turn: 2, Entry: session.Compaction{Summary: "The user wanted a.go edited.", KeptFrom: 1}},
		{Turn: 2, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "report"}}, Source: session.SourceTask, Tasks: []string{"7f3a1c22"}}},
		{Turn: 2, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: "c1", Name: "file_read", Arguments: json.RawMessage(`{}`)}}}},
	}
	if _, err := h.host.Store().Append(t.Context(), id, rows); err != nil {
		t.Fatal(err)
	}
	h.take()
	h.call("session/load", LoadSessionRequest{SessionID: id, Cwd: h.cwd, McpServers: []json.RawMessage{}}, nil)
	var got []string
	var calls []string
	for _, n := range h.take() {
		switch u := n.Update.(type) {
		case ContentChunk:
			got = append(got, u.Tag+":"+strings.TrimSpace(u.Content.Text)+u.Content.Name)
		case ToolCall:
			got = append(got, "tool_call:"+u.Title)
			calls = append(calls, u.ToolCallID)
		case ToolCallUpdate:
			s := "tool_call_update:" + u.Status
			if len(u.Content) > 0 && u.Content[0].Content != nil && strings.HasPrefix(u.Content[0].Content.Text, "```diff\n") {
				s += ":diff"
			}
			got = append(got, s)
		case NoticeUpdate:
			got = append(got, "notice:"+u.Title)
		case CompactionUpdate:
			got = append(got, "compaction:"+u.Status+":"+u.Summary[0].Text)
		}
	}
	want := []string{
		"user_message_chunk:look at", "user_message_chunk:a.go",
		"agent_thought_chunk:hmm", "agent_message_chunk:Editing.", "tool_call:file_edit", "tool_call_update:completed:diff",
		"notice:A write was lost",
		"compaction:completed:The user wanted a.go edited.",
		"agent_message_chunk:(Background task 7f3a1c22 finished)",
		// The orphaned call is closed when the session is opened, and the
		// interruption said once.
		"tool_call:file_read", "tool_call_update:failed", "notice:The last turn was interrupted",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("replay:\n got %q\nwant %q", got, want)
	}
	// The provider reused c1; the thread gets two distinct ids.
	if len(calls) != 2 || calls[0] == calls[1] {
		t.Fatalf("call ids %v", calls)
	}
}

// TestResumeAndForkMakeIDsUnique: a thread from before may already hold
// the provider's ids, so a resumed or forked session's calls get ids meka
// makes unique.
func TestResumeAndForkMakeIDsUnique(t *testing.T) {
	rounds := `[{"tool_calls":[{"id":"c1","name":"noop"}]},{"text":"a"},{"tool_calls":[{"id":"c1","name":"noop"}]},{"text":"b"},{"tool_calls":[{"id":"c1","name":"noop"}]},{"text":"c"}]`
	noop := &fakeTool{spec: tool.Spec{Name: "noop", Description: "n", Schema: json.RawMessage(`{"type":"object"}`), Level: 1, Kind: tool.KindRead},
		run: func(context.Context, tool.Call) (tool.Result, error) { return tool.Text("ok"), nil }}
	h := newHarness(t, harnessOptions{rounds: rounds, tools: []tool.Tool{noop}})
	id := h.newSession()
	h.prompt(id, "one")
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	h.call("session/resume", LoadSessionRequest{SessionID: id, Cwd: h.cwd}, nil)
	h.take()
	h.prompt(id, "two")
	var fork NewSessionResponse
	h.call("session/fork", LoadSessionRequest{SessionID: id, Cwd: h.cwd}, &fork)
	if fork.SessionID == "" || fork.SessionID == id {
		t.Fatalf("fork: %+v", fork)
	}
	h.prompt(fork.SessionID, "three")
	var ids []string
	for _, n := range h.take() {
		if u, ok := n.Update.(ToolCall); ok {
			ids = append(ids, u.ToolCallID)
		}
	}
	if len(ids) != 2 || ids[0] == "c1" || ids[1] == "c1" || !strings.HasPrefix(ids[0], "c1~") {
		t.Fatalf("ids after resume and fork: %v", ids)
	}
	// The fork has the whole conversation; the source is unchanged.
	src, _ := h.host.Store().Rows(t.Context(), id, 0)
	forked, _ := h.host.Store().Rows(t.Context(), fork.SessionID, 0)
	if len(forked) != len(src)+4 { // the fork's own turn: message, call, result, reply
		t.Fatalf("fork has %d rows, source %d", len(forked), len(src))
	}
}

// TestIdleSweepReleasesAndReopens: a swept session's next request takes
// it up again, and sticky answers went with it.
func TestIdleSweepReleasesAndReopens(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"back"}]`, opts: Options{IdleTimeout: 1}})
	id := h.newSession()
	h.srv.sweep(t.Context())
	if h.srv.lookup(id) != nil {
		t.Fatal("the idle session was not released")
	}
	if _, ok := h.host.Get(id); ok {
		t.Fatal("the host still holds the swept session")
	}
	h.call("session/set_mode", SetSessionModeRequest{SessionID: id, ModeID: "read"}, nil)
	if h.srv.lookup(id) == nil {
		t.Fatal("set_mode did not reopen the swept session")
	}
	h.srv.sweep(t.Context())
	if resp := h.prompt(id, "hello?"); resp.StopReason != "end_turn" {
		t.Fatalf("prompt on a swept session: %+v", resp)
	}
	if e := h.callErr("session/prompt", PromptRequest{SessionID: "never-seen", Prompt: []ContentBlock{TextBlock("x")}}); e.Code != -32602 {
		t.Fatalf("an id this connection never had: %d", e.Code)
	}
}

func TestCloseReleasesTheSession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	if _, ok := h.host.Get(id); ok {
		t.Fatal("the host still holds a closed session")
	}
	if e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("x")}}); e.Code != -32602 {
		t.Fatalf("prompt after close: %d", e.Code)
	}
	if e := h.callErr("session/close", SessionIDRequest{SessionID: id}); e.Code != -32602 {
		t.Fatalf("closing twice: %d", e.Code)
	}
}

// TestNoticesWithoutCapability: a client that does not present notices
// gets them as [meka] chunks.
func TestNoticesWithoutCapability(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"error":{"status":400,"body":"bad request body"}}]`,
		init: &InitializeRequest{ProtocolVersion: 1}, opts: Options{RelayProviderErrors: true}})
	id := h.newSession()
	h.sync()
	h.take()
	e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("x")}})
	if e.Code != -32603 || !strings.Contains(string(e.Data), "bad request body") {
		t.Fatalf("provider failure: %d %s", e.Code, e.Data)
	}
	var text string
	for _, n := range h.take() {
		if c, ok := n.Update.(ContentChunk); ok {
			text += c.Content.Text
		}
	}
	if !strings.HasPrefix(text, "[meka warn] The turn failed") {
		t.Fatalf("chunk %q", text)
	}
}

// TestRelayPolicyWithholds: with relay_provider_errors off, neither the
// provider's text nor a connection error naming base_url reaches the
// client: not in the prompt's error, not in the failed turn's notice, not
// in that notice replayed by session/load. The notice is a warning.
func TestRelayPolicyWithholds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		prov   model.Provider
		rounds string
		secret string
	}{
		{name: "provider text", rounds: `[{"error":{"status":400,"body":"account 1234 over quota"}}]`, secret: "1234"},
		{name: "connection error", secret: "10.9.8.7", prov: failingProvider{&model.Error{Provider: "openai",
			Err: errors.New(`Post "http://10.9.8.7:8080/v1/chat/completions": dial tcp 10.9.8.7:8080: connect: connection refused`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{rounds: tc.rounds, provider: tc.prov})
			id := h.newSession()
			h.sync()
			h.take()
			e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("x")}})
			if e.Code != -32603 || strings.Contains(string(e.Data), tc.secret) || !strings.Contains(string(e.Data), "log") {
				t.Fatalf("withheld: %d %s", e.Code, e.Data)
			}
			failed := func(what string, ns []SessionNotification) {
				t.Helper()
				var found bool
				for _, n := range ns {
					if u, ok := n.Update.(NoticeUpdate); ok && u.Title == "The turn failed" {
						found = true
						if u.Severity != "warning" || strings.Contains(u.Description, tc.secret) || !strings.Contains(u.Description, "log") {
							t.Errorf("%s notice: %+v", what, u)
						}
					}
					if b, _ := json.Marshal(n); strings.Contains(string(b), tc.secret) {
						t.Errorf("%s: %s", what, b)
					}
				}
				if !found {
					t.Errorf("%s: no failure notice in %v", what, tags(ns))
				}
			}
			failed("live", h.take())
			h.call("session/close", SessionIDRequest{SessionID: id}, nil)
			h.call("session/load", LoadSessionRequest{SessionID: id, Cwd: h.cwd, McpServers: []json.RawMessage{}}, nil)
			h.sync()
			failed("replayed", h.take())
		})
	}
}

// failingProvider fails every request with err.
type failingProvider struct{ err error }

func (failingProvider) Name() string { return "openai" }

func (p failingProvider) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) { yield(nil, p.err) }
}

// onePixelPNG is a valid 70-byte PNG, which the image pipeline passes
// through untouched.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

func TestPromptContent(t *testing.T) {
	text := "package b"
	blob := "AAEC"
	parts, err := promptParts([]ContentBlock{
		TextBlock("see "),
		{Type: "resource_link", URI: "file:///p/a.go", Name: "a.go", MimeType: "text/x-go", Description: "the parser"},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///p/b.go", Text: &text}},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///p/c.bin", Blob: &blob}},
		{Type: "image", MimeType: "image/png", Data: onePixelPNG},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if r := parts[1].(model.Resource); r.PromptText() != `<resource_link name="a.go" uri="file:///p/a.go" mime="text/x-go">the parser</resource_link>` {
		t.Fatalf("link: %s", r.PromptText())
	}
	if r := parts[2].(model.Resource); r.Name != "b.go" || r.PromptText() != `<resource uri="file:///p/b.go">package b</resource>` {
		t.Fatalf("resource: %+v", r)
	}
	if r := parts[3].(model.Resource); r.Name != "c.bin" || r.PromptText() != `<resource uri="file:///p/c.bin" encoding="base64"/>` {
		t.Fatalf("blob: %+v", r)
	}
	if img := parts[4].(model.Image); img.MediaType != "image/png" || len(img.Data) != 70 {
		t.Fatalf("image: %+v", img)
	}
	for _, bad := range [][]ContentBlock{
		{{Type: "audio", MimeType: "audio/wav", Data: "AAAA"}},
		{{Type: "image", MimeType: "image/tiff", Data: "AAAA"}},
		{{Type: "image", MimeType: "image/png", Data: "%%%"}},
		{},
	} {
		if _, err := promptParts(bad, true); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if _, err := promptParts([]ContentBlock{{Type: "image", MimeType: "image/png", Data: "AAAA"}}, false); err == nil {
		t.Error("accepted an image without vision")
	}
	// A format models do not read goes through the pipeline as PNG.
	var bmpData bytes.Buffer
	if err := bmp.Encode(&bmpData, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	conv, err := promptParts([]ContentBlock{{Type: "image", MimeType: "image/bmp", Data: base64.StdEncoding.EncodeToString(bmpData.Bytes())}}, true)
	if err != nil || conv[0].(model.Image).MediaType != "image/png" {
		t.Fatalf("bmp: %+v %v", conv, err)
	}
}

func TestDiffContent(t *testing.T) {
	d := diffContent("/p/a.go", "--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n@@ -10,2 +10,2 @@\n ten\n-eleven\n+ELEVEN\n")
	if len(d) != 2 || *d[0].OldText != "one\ntwo\nthree\n" || *d[0].NewText != "one\nTWO\nthree\n" || *d[1].NewText != "ten\nELEVEN\n" {
		t.Fatalf("%+v", d)
	}
	d = diffContent("/p/n.go", "--- /dev/null\n+++ b/n.go\n@@ -0,0 +1,2 @@\n+a\n+b\n")
	if len(d) != 1 || d[0].OldText != nil || *d[0].NewText != "a\nb\n" {
		t.Fatalf("new file: %+v", d)
	}
}

// TestBackgroundReport: a background task's report arrives outside any
// prompt as a notice carrying the task, then the turn it delivers.
func TestBackgroundReport(t *testing.T) {
	h := newHarness(t, harnessOptions{shell: true, perms: host.Permissions{Default: permission.Unrestricted},
		rounds: `[{"tool_calls":[{"id":"b","name":"shell_execute","arguments":{"command":"echo background-done","background":true}}]},{"text":"started"},{"text":"it finished"}]`})
	id := h.newSession()
	h.prompt(id, "run it in the background")
	var notice *NoticeUpdate
	var text string
	for range 100000 {
		h.sync()
		for _, n := range h.take() {
			switch u := n.Update.(type) {
			case NoticeUpdate:
				notice = &u
			case ContentChunk:
				if u.Tag == TagAgentMessage {
					text += u.Content.Text
				}
			}
		}
		if notice != nil && strings.Contains(text, "it finished") {
			break
		}
	}
	if notice == nil || !strings.HasPrefix(notice.Title, "Background task ") {
		t.Fatalf("notice %+v", notice)
	}
	bg, _ := notice.Meta["background"].(map[string]any)
	tasks, _ := bg["tasks"].([]any)
	if len(tasks) != 1 || !strings.Contains(fmt.Sprint(tasks[0]), "echo background-done") {
		t.Fatalf("_meta.background: %+v", notice.Meta)
	}
	if !strings.Contains(text, "it finished") {
		t.Fatalf("the report's turn was not streamed: %q", text)
	}
}

// TestClientCwdWins: a load, resume or fork naming another directory
// records it (canonically) once the session has opened; a refused load
// writes nothing.
func TestClientCwdWins(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)

	moved := t.TempDir()
	h.call("session/resume", LoadSessionRequest{SessionID: id, Cwd: moved}, nil)
	canon, _ := filepath.EvalSymlinks(moved)
	if m, _ := h.host.Store().Get(t.Context(), id); m.Cwd != canon {
		t.Fatalf("cwd after resume %q, want %q", m.Cwd, canon)
	}
	if hs, ok := h.host.Get(id); !ok || hs.Meta().Cwd != canon {
		t.Fatalf("open session's cwd not updated")
	}

	other := t.TempDir()
	var fork NewSessionResponse
	h.call("session/fork", LoadSessionRequest{SessionID: id, Cwd: other}, &fork)
	canonOther, _ := filepath.EvalSymlinks(other)
	if m, _ := h.host.Store().Get(t.Context(), fork.SessionID); m.Cwd != canonOther {
		t.Fatalf("fork cwd %q, want %q", m.Cwd, canonOther)
	}
	if m, _ := h.host.Store().Get(t.Context(), id); m.Cwd != canon {
		t.Fatalf("the source moved with its fork: %q", m.Cwd)
	}

	if e := h.callErr("session/load", LoadSessionRequest{SessionID: id, Cwd: filepath.Join(other, "missing")}); e == nil {
		t.Fatal("load with a missing cwd succeeded")
	}
	if m, _ := h.host.Store().Get(t.Context(), id); m.Cwd != canon {
		t.Fatalf("a refused load changed the cwd to %q", m.Cwd)
	}
}

// TestPromptOverMaxRequestBytes: a prompt the profile cannot send is
// refused with InvalidParams, and nothing reaches the log.
func TestPromptOverMaxRequestBytes(t *testing.T) {
	h := newHarness(t, harnessOptions{maxBytes: 100, rounds: `[{"text":"fine"}]`})
	id := h.newSession()
	e := h.callErr("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock(strings.Repeat("x", 101))}})
	if e == nil || e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "max_request_bytes") {
		t.Fatalf("error %+v", e)
	}
	// Nothing: the system prompt is recorded with the first turn.
	if rows, _ := h.host.Store().Rows(t.Context(), id, 0); len(rows) != 0 {
		t.Fatalf("%d rows stored", len(rows))
	}
	if r := h.prompt(id, "short"); r.StopReason != "end_turn" {
		t.Fatalf("a prompt within the bound: %+v", r)
	}
}

// TestProfileGone: a session whose profile left the config is refused
// with InvalidParams by fork, as by load and resume, and nothing is made.
func TestProfileGone(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	if err := h.lookup(id).session().Update(t.Context(), func(m *session.Meta) { m.Profile = "gone" }); err != nil {
		t.Fatal(err)
	}
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	before, err := h.host.Store().List(t.Context(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"session/fork", "session/load", "session/resume"} {
		e := h.callErr(method, LoadSessionRequest{SessionID: id, Cwd: h.cwd, McpServers: []json.RawMessage{}})
		if e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, `profile "gone"`) {
			t.Errorf("%s: %d %s", method, e.Code, e.Message)
		}
	}
	after, err := h.host.Store().List(t.Context(), session.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Sessions) != len(before.Sessions) {
		t.Errorf("a refused fork made a session: %d, then %d", len(before.Sessions), len(after.Sessions))
	}
}

// TestWideWorkspaceRefused: session/new, load and fork refuse the home
// directory and / at the workspace level with InvalidParams and make or
// change nothing; under --workspace-home (host.Options.WorkspaceHome)
// all three take them.
func TestWideWorkspaceRefused(t *testing.T) {
	home, _ := host.Canonical(t.TempDir())
	for _, allowed := range []bool{false, true} {
		h := newHarness(t, harnessOptions{home: home, workspaceHome: allowed})
		id := h.newSession()
		h.call("session/close", SessionIDRequest{SessionID: id}, nil)
		for _, cwd := range []string{home, "/"} {
			for _, method := range []string{"session/new", "session/load", "session/fork"} {
				var params any = LoadSessionRequest{SessionID: id, Cwd: cwd}
				if method == "session/new" {
					params = NewSessionRequest{Cwd: cwd, McpServers: []json.RawMessage{}}
				}
				if allowed {
					if err := h.client.Call(t.Context(), method, params, nil); err != nil {
						t.Errorf("%s in %s under --workspace-home: %v", method, cwd, err)
					}
					continue
				}
				e := h.callErr(method, params)
				if e == nil || e.Code != jsonrpc.InvalidParams || !strings.Contains(e.Message, "--workspace-home") {
					t.Errorf("%s in %s: %+v, want InvalidParams naming --workspace-home", method, cwd, e)
				}
			}
		}
		if allowed {
			continue
		}
		list, err := h.host.Store().List(t.Context(), session.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Sessions) != 1 || list.Sessions[0].Cwd != h.cwd {
			t.Fatalf("after the refusals: %+v", list.Sessions)
		}
	}
}
