package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
)

const toolRound = `{"rounds":[
	{"thinking":"Need the file.","signature":"gAAAAB-opaque+/=\u003c\u2028","text":"Reading.",
	 "tool_calls":[{"id":"call_91","name":"open_file","arguments":{"path":"go.mod"}}],
	 "usage":{"input_tokens":300,"output_tokens":40,"cache_read_tokens":1536,"cache_write_tokens":4}},
	{"text":"It is example.com/x."}]}`

// doneItems are the items h's next reply sends whole, as they come.
func doneItems(t *testing.T, h *modeltest.Handler) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(h.Reply("/v1/responses", `{"stream":true}`), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string
			Item json.RawMessage
		}
		if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "response.output_item.done" {
			out = append(out, string(ev.Item))
		}
	}
	return out
}

// A tool round trip: reasoning, text and a call stream as deltas; the
// next request sends the reasoning item back byte for byte, then the
// text, the call with its arguments as sent, and the call's output.
func TestToolRoundTrip(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, toolRound))
	c := client(srv, responses.Options{ReasoningEffort: "high"})
	req := hello()
	req.System = "You are meka."
	req.CacheKey = "sess-7f3c"
	req.Tools = []model.ToolSpec{{Name: "open_file", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	resp, events := mustRun(t, c, req)

	var text, thinking strings.Builder
	var call model.ToolCallDelta
	for _, ev := range events {
		switch ev := ev.(type) {
		case model.TextDelta:
			text.WriteString(ev.Text)
		case model.ThinkingDelta:
			thinking.WriteString(ev.Text)
		case model.ToolCallDelta:
			if ev.ID != "" {
				call = ev
			}
		}
	}
	if text.String() != "Reading." || thinking.String() != "Need the file." || call.ID != "call_91" || call.Name != "open_file" {
		t.Fatalf("deltas: text %q thinking %q call %+v", text.String(), thinking.String(), call)
	}
	if resp.Stop != model.StopToolUse || resp.Model != "gpt-test" ||
		resp.Usage != (model.Usage{InputTokens: 300, OutputTokens: 40, CacheReadTokens: 1536, CacheWriteTokens: 4}) {
		t.Fatalf("response %+v", resp)
	}
	th, ok := resp.Message.Parts[0].(model.Thinking)
	if !ok || th.Provider != responses.Name || th.Text != "Need the file." {
		t.Fatalf("parts %+v", resp.Message.Parts)
	}
	want := doneItems(t, modeltest.NewHandler(parse(t, toolRound)))[0]
	if th.Signature != want {
		t.Fatalf("kept item\n%s\nwant the item as sent\n%s", th.Signature, want)
	}

	first := map[string]any{}
	if err := json.Unmarshal(srv.Requests()[0].Body, &first); err != nil {
		t.Fatal(err)
	}
	if first["store"] != false || first["stream"] != true || first["prompt_cache_key"] != "sess-7f3c" || first["instructions"] != "You are meka." {
		t.Errorf("request %s", srv.Requests()[0].Body)
	}
	if inc, _ := json.Marshal(first["include"]); string(inc) != `["reasoning.encrypted_content"]` {
		t.Errorf("include %s", inc)
	}
	if r, _ := json.Marshal(first["reasoning"]); string(r) != `{"effort":"high","summary":"auto"}` {
		t.Errorf("reasoning %s", r)
	}

	req.Messages = append(req.Messages, resp.Message, model.Message{Role: model.RoleTool, Parts: model.Parts{
		model.ToolResult{CallID: "call_91", Name: "open_file", Content: model.Parts{model.Text{Text: "module example.com/x\n"}}}}})
	resp2, _ := mustRun(t, c, req)
	if resp2.Message.Text() != "It is example.com/x." || resp2.Stop != model.StopEndTurn {
		t.Fatalf("second reply %+v", resp2)
	}
	in := input(t, srv, 1)
	got := make([]string, len(in))
	for i, b := range in {
		got[i] = string(b)
	}
	// The item goes back as it came, less the id the API keeps no item
	// under when store is false.
	sent := strings.Replace(want, `"id":"rs_modeltest_1",`, "", 1)
	wantIn := []string{
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}`,
		sent,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Reading."}]}`,
		`{"type":"function_call","call_id":"call_91","name":"open_file","arguments":"{\"path\":\"go.mod\"}"}`,
		`{"type":"function_call_output","call_id":"call_91","output":"module example.com/x\n"}`,
	}
	if strings.Join(got, "\n") != strings.Join(wantIn, "\n") {
		t.Fatalf("second input:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantIn, "\n"))
	}
	if !bytes.Contains(srv.Requests()[1].Body, []byte(sent)) || sent == want {
		t.Fatal("the reasoning item is not in the request byte for byte")
	}
}

// Thinking of another provider, or of this one without its item, is
// never sent.
func TestForeignThinkingDropped(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Parts: model.Parts{
			model.Thinking{Text: "claude's", Signature: "sig", Provider: "anthropic"},
			model.Thinking{Text: "no item", Provider: responses.Name},
			model.Text{Text: "a"}}},
		model.Message{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "b"}}})
	mustRun(t, client(srv, responses.Options{}), req)
	b := srv.Requests()[0].Body
	if bytes.Contains(b, []byte("claude's")) || bytes.Contains(b, []byte("no item")) || bytes.Contains(b, []byte(`"reasoning"`)) {
		t.Fatalf("sent %s", b)
	}
}

// Images go as input_image data URLs, in user messages and tool results;
// without vision each is a placeholder.
func TestImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n")
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "look"}, model.Image{MediaType: "image/png", Data: png, Name: "a.png"}}},
		{Role: model.RoleAssistant, Parts: model.Parts{model.ToolCall{ID: "c1", Name: "shot", Arguments: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "c1", Name: "shot", Content: model.Parts{
			model.Text{Text: "here"}, model.Image{MediaType: "image/png", Data: png}}}}},
	}}
	for _, vision := range []bool{true, false} {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
		req.Vision = vision
		mustRun(t, client(srv, responses.Options{}), req)
		in := input(t, srv, 0)
		url := `"image_url":"data:image/png;base64,iVBORw0KGgo="`
		if vision {
			if !strings.Contains(string(in[0]), `{"type":"input_image",`+url+`}`) ||
				string(in[2]) != `{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"here"},{"type":"input_image",`+url+`}]}` {
				t.Errorf("with vision:\n%s\n%s", in[0], in[2])
			}
		} else if bytes.Contains(srv.Requests()[0].Body, []byte("input_image")) || !strings.Contains(string(in[0]), "image a.png was omitted") {
			t.Errorf("without vision: %s", srv.Requests()[0].Body)
		}
	}
}

// An error status is retried when it may pass, honouring Retry-After;
// one that cannot is reported at once with the provider's text.
func TestErrors(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"error":{"status":429,"body":"slow down","retry_after":"1ms"}},{"error":{"status":503}},{"text":"third time"},
		{"error":{"status":400,"body":"bad input"}}]}`))
	c := client(srv, responses.Options{})
	resp, _ := mustRun(t, c, hello())
	if resp.Message.Text() != "third time" || len(srv.Requests()) != 3 {
		t.Fatalf("%q after %d requests", resp.Message.Text(), len(srv.Requests()))
	}
	_, _, err := run(t, c, hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 400 || me.Retryable() || !strings.Contains(me.Body, "bad input") || me.Provider != responses.Name {
		t.Fatalf("err = %v", err)
	}
	if len(srv.Requests()) != 4 {
		t.Fatalf("a 400 was retried: %d requests", len(srv.Requests()))
	}
}

// A connection refused is a retryable *model.Error.
func TestConnectionRefused(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[]}`))
	url := srv.URL
	srv.Close()
	_, _, err := run(t, responses.New(responses.Options{BaseURL: url, Retry: model.Retry{Attempts: 1}}), hello())
	var me *model.Error
	if !errors.As(err, &me) || !me.Retryable() || me.Status != 0 {
		t.Fatalf("err = %v", err)
	}
}

// Failures inside a 200 stream: response.failed and error events carry
// the status their code has outside one; a stream cut before its
// terminal event is no reply.
func TestStreamFailures(t *testing.T) {
	created := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-x\"}}\n\n"
	text := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"par\"}\n\n"
	for _, tc := range []struct {
		name, body string
		status     int
		retryable  bool
		afterText  bool
	}{
		{"failed rate limit", created + "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached. Please try again in 1.5s.\"}}}\n\n", 429, true, false},
		{"failed server", created + "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"oops\"}}}\n\n", 500, true, false},
		{"failed quota", created + "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"insufficient_quota\",\"message\":\"pay\"}}}\n\n", 403, false, false},
		{"error event", created + "event: error\ndata: {\"type\":\"error\",\"code\":\"context_length_exceeded\",\"message\":\"too long\"}\n\n", 400, false, false},
		{"unknown error", created + "data: {\"type\":\"error\",\"code\":\"weird\",\"message\":\"?\"}\n\n", 0, true, false},
		{"cut", created + text, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := responses.New(responses.Options{BaseURL: "http://x.invalid", HTTPClient: &http.Client{Transport: modeltest.Replay(tc.body)}, Retry: model.Retry{Attempts: 1}})
			_, events, err := run(t, c, hello())
			if tc.afterText {
				if !errors.Is(err, model.ErrNoResponse) || len(events) != 1 {
					t.Fatalf("err = %v after %d events", err, len(events))
				}
				return
			}
			var me *model.Error
			if !errors.As(err, &me) || me.Status != tc.status || me.Retryable() != tc.retryable {
				t.Fatalf("err = %#v", err)
			}
			if tc.name == "failed rate limit" && me.RetryAfter.Seconds() != 1.5 {
				t.Errorf("retry after %v, want the 1.5s the message asks", me.RetryAfter)
			}
		})
	}
}

// A failure in the stream before any output is retried like an error
// status.
func TestStreamFailureRetried(t *testing.T) {
	var n int
	body := []string{
		"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"oops\"}}}\n\n",
		"data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"ok\"}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
	}
	c := responses.New(responses.Options{BaseURL: "http://x.invalid", Retry: fast, HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n++
		return modeltest.Replay(body[min(n-1, 1)]).RoundTrip(r)
	})}})
	resp, _ := mustRun(t, c, hello())
	if resp.Message.Text() != "ok" || n != 2 {
		t.Fatalf("%q after %d tries", resp.Message.Text(), n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Incomplete and refused replies say so.
func TestStops(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"cut","stop":"max_tokens"},{"text":"no","stop":"refusal"}]}`))
	c := client(srv, responses.Options{})
	for _, want := range []model.StopReason{model.StopMaxTokens, model.StopRefusal} {
		resp, _ := mustRun(t, c, hello())
		if resp.Stop != want || resp.Message.Text() == "" {
			t.Errorf("stop %q text %q, want %q", resp.Stop, resp.Message.Text(), want)
		}
	}
}

// Breaking out of the stream stops the call; a canceled context ends it
// with the cancellation.
func TestCancel(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"a long reply in pieces"},{"text":"again"}]}`))
	c := client(srv, responses.Options{})
	for _, err := range c.Stream(t.Context(), hello()) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
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
