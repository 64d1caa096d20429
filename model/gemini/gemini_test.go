package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
)

const toolRound = `{"rounds":[
	{"thinking":"Need the file.","signature":"CpcBAdHt+/=\u003c","text":"Reading.",
	 "tool_calls":[{"id":"ignored","name":"open_file","arguments":{"path":"go.mod"}},{"name":"list"}],
	 "usage":{"input_tokens":300,"output_tokens":40,"cache_read_tokens":1536}},
	{"text":"It is example.com/x."}]}`

// A tool round trip: thought, text and calls stream as deltas; the next
// request sends the model turn back as Gemini sent it, the signed call's
// bytes untouched, then the results as functionResponse parts by name.
func TestToolRoundTrip(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, toolRound))
	c := client(srv, gemini.Options{APIKey: "k-test", ReasoningEffort: "high"})
	req := hello()
	req.System = "You are meka."
	req.Tools = []model.ToolSpec{{Name: "open_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}, {Name: "list"}}
	resp, events := mustRun(t, c, req)

	var text, thinking strings.Builder
	var ids []string
	for _, ev := range events {
		switch ev := ev.(type) {
		case model.TextDelta:
			text.WriteString(ev.Text)
		case model.ThinkingDelta:
			thinking.WriteString(ev.Text)
		case model.ToolCallDelta:
			ids = append(ids, ev.ID)
		}
	}
	calls := resp.Message.ToolCalls()
	if text.String() != "Reading." || thinking.String() != "Need the file." || len(calls) != 2 || calls[0].Name != "open_file" ||
		string(calls[0].Arguments) != `{"path":"go.mod"}` || calls[0].ID == "" || calls[0].ID == calls[1].ID || ids[0] != calls[0].ID {
		t.Fatalf("text %q thinking %q calls %+v", text.String(), thinking.String(), calls)
	}
	if resp.Stop != model.StopToolUse || resp.Model != "gpt-test" || resp.Usage != (model.Usage{InputTokens: 300, OutputTokens: 40, CacheReadTokens: 1536}) {
		t.Fatalf("response %+v", resp)
	}
	r0 := srv.Requests()[0]
	if r0.Path != "/v1beta/models/gpt-test:streamGenerateContent" || r0.Header.Get("x-goog-api-key") != "k-test" || r0.Header.Get("Authorization") != "" {
		t.Fatalf("path %s headers %v", r0.Path, r0.Header)
	}
	for _, want := range []string{`"systemInstruction":{"parts":[{"text":"You are meka."}]}`,
		`{"name":"open_file","description":"Read a file","parameters":{"properties":{"path":{"type":"STRING"}},"required":["path"],"type":"OBJECT"}}`,
		`{"name":"list"}`, `"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"HIGH"}`} {
		if !bytes.Contains(r0.Body, []byte(want)) {
			t.Errorf("request lacks %s:\n%s", want, r0.Body)
		}
	}

	req.Messages = append(req.Messages, resp.Message, model.Message{Role: model.RoleTool, Parts: model.Parts{
		model.ToolResult{CallID: calls[0].ID, Name: "open_file", Content: model.Parts{model.Text{Text: "module example.com/x\n"}}},
		model.ToolResult{CallID: calls[1].ID, Name: "list", IsError: true, Content: model.Parts{model.Text{Text: "denied"}}}}})
	resp2, _ := mustRun(t, c, req)
	if resp2.Message.Text() != "It is example.com/x." || resp2.Stop != model.StopEndTurn {
		t.Fatalf("second reply %+v", resp2)
	}
	got := contents(t, srv, 1)
	want := []string{
		`{"role":"user","parts":[{"text":"hi"}]}`,
		`{"role":"model","parts":[{"text":"Need the file.","thought":true},{"text":"Reading."},{"functionCall":{"args":{"path":"go.mod"},"name":"open_file"},"thoughtSignature":"CpcBAdHt+/=\u003c"},{"functionCall":{"args":{},"name":"list"}}]}`,
		`{"role":"user","parts":[{"functionResponse":{"name":"open_file","response":{"output":"module example.com/x\n"}}},{"functionResponse":{"name":"list","response":{"error":"denied"}}}]}`,
	}
	for i := range want {
		if i >= len(got) || string(got[i]) != want[i] {
			t.Fatalf("second request's contents:\n%s\nwant\n%s", got, strings.Join(want, "\n"))
		}
	}
}

// Thinking of another provider is never sent; a turn kept without its
// parts goes back from its text and calls.
func TestForeignThinkingDropped(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Parts: model.Parts{
			model.Thinking{Text: "claude's", Signature: "sig", Provider: "anthropic"},
			model.Text{Text: "a"}, model.ToolCall{ID: "toolu_1", Name: "t", Arguments: json.RawMessage(`"not an object"`)}}},
		model.Message{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "toolu_1", Name: "t"}}})
	mustRun(t, client(srv, gemini.Options{}), req)
	got := contents(t, srv, 0)
	if bytes.Contains(srv.Requests()[0].Body, []byte("claude's")) ||
		string(got[1]) != `{"role":"model","parts":[{"text":"a"},{"functionCall":{"id":"toolu_1","name":"t","args":{}}}]}` ||
		string(got[2]) != `{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"t","response":{"output":""}}}]}` {
		t.Fatalf("sent %s", got)
	}
}

// Images go as inlineData, in user turns and after tool results; without
// vision each is a placeholder.
func TestImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n")
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "look"}, model.Image{MediaType: "image/png", Data: png, Name: "a.png"}}},
		{Role: model.RoleAssistant, Parts: model.Parts{model.ToolCall{ID: "c1", Name: "shot", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "c1", Name: "shot", Content: model.Parts{
			model.Text{Text: "here"}, model.Image{MediaType: "image/png", Data: png}}}}},
	}}
	inline := `{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}`
	for _, vision := range []bool{true, false} {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
		req.Vision = vision
		mustRun(t, client(srv, gemini.Options{}), req)
		b := string(srv.Requests()[0].Body)
		if vision && strings.Count(b, inline) != 2 {
			t.Errorf("with vision: %s", b)
		}
		if !vision && (strings.Contains(b, "inlineData") || !strings.Contains(b, "image a.png was omitted")) {
			t.Errorf("without vision: %s", b)
		}
	}
}

// A schema Gemini cannot take is refused before anything is sent, naming
// the tool and the keyword.
func TestSchemaRefused(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.Tools = []model.ToolSpec{{Name: "odd", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"not":{"type":"null"}}}}`)}}
	_, _, err := run(t, client(srv, gemini.Options{}), req)
	if !errors.Is(err, gemini.ErrBadRequest) || !strings.Contains(err.Error(), "tool odd") || !strings.Contains(err.Error(), `"not"`) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v after %d requests", err, len(srv.Requests()))
	}
}

// A 429 is retried after the delay its RetryInfo names; a 400 is not.
func TestErrors(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"error":{"status":429,"body":"quota","retry_after":"1s"}},{"error":{"status":503}},{"text":"third time"},
		{"error":{"status":400,"body":"bad input"}}]}`))
	c := client(srv, gemini.Options{})
	resp, _ := mustRun(t, c, hello())
	if resp.Message.Text() != "third time" || len(srv.Requests()) != 3 {
		t.Fatalf("%q after %d requests", resp.Message.Text(), len(srv.Requests()))
	}
	_, _, err := run(t, c, hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 400 || me.Retryable() || !strings.Contains(me.Body, "bad input") || me.Provider != gemini.Name {
		t.Fatalf("err = %v", err)
	}
	// The delay is read from the body.
	c1 := gemini.New(gemini.Options{BaseURL: "http://x.invalid/v1beta", Model: "m", Retry: model.Retry{Attempts: 1},
		HTTPClient: &http.Client{Transport: modeltest.NewHandler(parse(t, `{"rounds":[{"error":{"status":429,"retry_after":"38s"}}]}`)).Transport()}})
	_, _, err = run(t, c1, hello())
	if !errors.As(err, &me) || me.RetryAfter.Seconds() != 38 {
		t.Fatalf("err = %v, want the 38s RetryInfo asks", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[]}`))
	url := srv.URL
	srv.Close()
	_, _, err := run(t, gemini.New(gemini.Options{BaseURL: url, Model: "m", Retry: model.Retry{Attempts: 1}}), hello())
	var me *model.Error
	if !errors.As(err, &me) || !me.Retryable() || me.Status != 0 {
		t.Fatalf("err = %v", err)
	}
}

// An error sent as a stream event carries its code as the status; a
// stream cut before a finish reason is no reply; a blocked prompt is a
// refusal.
func TestStreamFailures(t *testing.T) {
	text := "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"par\"}]},\"index\":0}]}\n\n"
	for _, tc := range []struct {
		name, body string
		status     int
		retryable  bool
	}{
		{"error event", "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n", 503, true},
		{"error without code", "data: {\"error\":{\"message\":\"odd\"}}\n\n", 0, true},
	} {
		c := gemini.New(gemini.Options{BaseURL: "http://x.invalid", Model: "m", HTTPClient: &http.Client{Transport: modeltest.Replay(tc.body)}, Retry: model.Retry{Attempts: 1}})
		_, _, err := run(t, c, hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != tc.status || me.Retryable() != tc.retryable {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	c := gemini.New(gemini.Options{BaseURL: "http://x.invalid", Model: "m", HTTPClient: &http.Client{Transport: modeltest.Replay(text)}, Retry: model.Retry{Attempts: 1}})
	if _, events, err := run(t, c, hello()); !errors.Is(err, model.ErrNoResponse) || len(events) != 1 {
		t.Errorf("cut: err = %v after %d events", err, len(events))
	}
	blocked := "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":4}}\n\n"
	c = gemini.New(gemini.Options{BaseURL: "http://x.invalid", Model: "m", HTTPClient: &http.Client{Transport: modeltest.Replay(blocked)}})
	if resp, _ := mustRun(t, c, hello()); resp.Stop != model.StopRefusal {
		t.Errorf("blocked: stop %q", resp.Stop)
	}
}

func TestStops(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"cut","stop":"max_tokens"},{"text":"no","stop":"refusal"}]}`))
	c := client(srv, gemini.Options{})
	for _, want := range []model.StopReason{model.StopMaxTokens, model.StopRefusal} {
		if resp, _ := mustRun(t, c, hello()); resp.Stop != want {
			t.Errorf("stop %q, want %q", resp.Stop, want)
		}
	}
}

func TestCancel(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"a long reply in pieces"}]}`))
	c := client(srv, gemini.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var err error
	for ev, e := range c.Stream(ctx, hello()) {
		if e != nil {
			err = e
			break
		}
		if _, ok := ev.(model.TextDelta); ok {
			cancel()
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
}
