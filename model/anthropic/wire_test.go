package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
)

// replay serves testdata/streams/name to every request, flushing after
// each event so the client reads it as a server would send it.
func replay(t *testing.T, name string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "streams", name))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for ev := range bytes.SplitAfterSeq(data, []byte("\n\n")) {
			w.Write(ev)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// deltas is what a stream's events add up to.
type deltas struct {
	text, thinking string
	calls          map[int]*model.ToolCall // by ToolCallDelta.Index
	argPieces      map[int]int
}

func sum(t *testing.T, events []model.Event) deltas {
	t.Helper()
	d := deltas{calls: map[int]*model.ToolCall{}, argPieces: map[int]int{}}
	for _, ev := range events {
		switch ev := ev.(type) {
		case model.TextDelta:
			d.text += ev.Text
		case model.ThinkingDelta:
			d.thinking += ev.Text
		case model.ToolCallDelta:
			c := d.calls[ev.Index]
			if c == nil {
				if ev.ID == "" || ev.Name == "" {
					t.Errorf("first delta of call %d does not name it: %+v", ev.Index, ev)
				}
				c = &model.ToolCall{ID: ev.ID, Name: ev.Name}
				d.calls[ev.Index] = c
			}
			if ev.Arguments != "" {
				c.Arguments = append(c.Arguments, ev.Arguments...)
				d.argPieces[ev.Index]++
			}
		}
	}
	return d
}

// TestRecordedStreams reads streams written in the documented Messages
// format, each flushed event by event over HTTP.
func TestRecordedStreams(t *testing.T) {
	for _, tc := range []struct {
		file           string
		text, thinking string
		calls          []model.ToolCall
		usage          model.Usage
		stop           model.StopReason
		parts          int
	}{
		{file: "text.sse", text: "Hello! How can I help you today?", stop: model.StopEndTurn, parts: 1,
			usage: model.Usage{InputTokens: 25, OutputTokens: 15}},
		{file: "text_crlf.sse", text: "Hello! How can I help you today?", stop: model.StopEndTurn, parts: 1,
			usage: model.Usage{InputTokens: 25, OutputTokens: 15}},
		{file: "tool_use_split.sse", text: "Okay, let's check the weather for San Francisco, CA:", stop: model.StopToolUse, parts: 3,
			calls: []model.ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)},
				{ID: "toolu_02", Name: "get_time", Arguments: json.RawMessage(`{}`)},
			},
			usage: model.Usage{InputTokens: 472, OutputTokens: 89}},
		{file: "thinking.sse", text: "27 * 453 = 12,231", stop: model.StopEndTurn, parts: 3,
			thinking: "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3",
			usage:    model.Usage{InputTokens: 10, OutputTokens: 291, CacheWriteTokens: 2048}},
		{file: "cache_usage.sse", text: "Cached.", stop: model.StopEndTurn, parts: 1,
			usage: model.Usage{InputTokens: 3, OutputTokens: 42, CacheReadTokens: 14000, CacheWriteTokens: 120}},
		{file: "stop_refusal.sse", text: "Partial", stop: model.StopRefusal, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 7}},
		{file: "stop_max_tokens.sse", text: "Partial", stop: model.StopMaxTokens, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 7}},
		{file: "stop_model_context_window_exceeded.sse", text: "Partial", stop: model.StopMaxTokens, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 7}},
		{file: "stop_stop_sequence.sse", text: "Partial", stop: model.StopEndTurn, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 7}},
		{file: "stop_pause_turn.sse", text: "Partial", stop: model.StopEndTurn, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 7}},
		// A comment, an event type, block types and delta types this
		// adapter does not know are skipped; the server tool's input is
		// not taken for a call of meka's.
		{file: "unknown_events.sse", text: "Found it.", stop: model.StopEndTurn, parts: 1, usage: model.Usage{InputTokens: 9, OutputTokens: 5}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			srv, _ := replay(t, tc.file)
			resp, events := mustRun(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
			m := resp.Message
			if m.Text() != tc.text || resp.Stop != tc.stop || resp.Usage != tc.usage || len(m.Parts) != tc.parts {
				t.Errorf("text %q, stop %q, usage %+v, %d parts\nwant %q, %q, %+v, %d",
					m.Text(), resp.Stop, resp.Usage, len(m.Parts), tc.text, tc.stop, tc.usage, tc.parts)
			}
			if resp.Model != "claude-sonnet-4-5-20250929" {
				t.Errorf("model = %q", resp.Model)
			}
			if got := m.ToolCalls(); !reflect.DeepEqual(got, tc.calls) {
				t.Errorf("calls = %s\nwant %s", fmt.Sprint(got), fmt.Sprint(tc.calls))
			}
			d := sum(t, events)
			if d.text != tc.text || d.thinking != tc.thinking {
				t.Errorf("deltas add up to text %q, thinking %q", d.text, d.thinking)
			}
			if len(d.calls) != len(tc.calls) {
				t.Fatalf("deltas name %d calls, want %d", len(d.calls), len(tc.calls))
			}
			for i, want := range tc.calls {
				got := d.calls[i]
				if got.ID != want.ID || got.Name != want.Name || string(model.ToolArguments(string(got.Arguments))) != string(want.Arguments) {
					t.Errorf("deltas of call %d add up to %+v", i, got)
				}
			}
			if tc.file == "tool_use_split.sse" && d.argPieces[0] != 7 {
				t.Errorf("call 0 arrived in %d argument deltas, want the 7 non-empty pieces", d.argPieces[0])
			}
		})
	}
}

func TestRecordedThinkingSigned(t *testing.T) {
	srv, _ := replay(t, "thinking.sse")
	resp, _ := mustRun(t, anthropic.New(anthropic.Options{BaseURL: srv.URL}), hello())
	want := model.Parts{
		model.Thinking{Text: "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3",
			Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds", Provider: "anthropic"},
		model.Thinking{Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP", Provider: "anthropic"},
		model.Text{Text: "27 * 453 = 12,231"},
	}
	if !reflect.DeepEqual(resp.Message.Parts, want) {
		t.Errorf("parts = %#v", resp.Message.Parts)
	}
}

// A stream that ends before message_stop is an error, never a short
// reply: the connection may have been cut anywhere.
func TestRecordedStreamsCutShort(t *testing.T) {
	for _, file := range []string{"cut_before_stop.sse", "cut_mid_event.sse"} {
		t.Run(file, func(t *testing.T) {
			srv, n := replay(t, file)
			_, events, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
			if !errors.Is(err, model.ErrNoResponse) {
				t.Errorf("err = %v, want ErrNoResponse", err)
			}
			for _, ev := range events {
				if _, ok := ev.(model.Completed); ok {
					t.Error("a cut stream completed")
				}
			}
			if n.Load() != 1 {
				t.Errorf("%d requests: output had been seen, so no retry", n.Load())
			}
		})
	}
}

func TestRecordedErrorEvents(t *testing.T) {
	t.Run("after output", func(t *testing.T) {
		srv, n := replay(t, "error_after_output.sse")
		_, events, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 529 || me.Provider != "anthropic" || !strings.Contains(me.Body, `"overloaded_error"`) {
			t.Fatalf("err = %#v, want a 529 from the error event", err)
		}
		if len(events) != 1 || n.Load() != 1 {
			t.Errorf("%d events, %d requests; want the text and no retry", len(events), n.Load())
		}
	})
	t.Run("before output", func(t *testing.T) {
		srv, n := replay(t, "error_before_output.sse")
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 500 || !me.Retryable() || !strings.Contains(me.Body, "Internal server error") {
			t.Fatalf("err = %#v, want a retryable 500", err)
		}
		if n.Load() != int32(fast.Attempts) {
			t.Errorf("%d requests, want %d", n.Load(), fast.Attempts)
		}
	})
}

// An error event of a type not known, or one that is not even JSON, is
// still an error, and worth another try.
func TestErrorEventUnknownType(t *testing.T) {
	for _, data := range []string{
		`{"type":"error","error":{"type":"brand_new_error","message":"something"}}`,
		`upstream exploded`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, messageStart+"event: error\ndata: "+data+"\n\n")
		}))
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: model.Retry{Attempts: 1}}), hello())
		srv.Close()
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 0 || !me.Retryable() || me.Body != data {
			t.Errorf("%s: err = %#v, want a retryable error carrying the event", data, err)
		}
	}
}

// An event this adapter reads but cannot decode fails the call, naming
// the event, rather than being dropped from the reply.
func TestMalformedEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, messageStart+"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\"zero\"}\n\n")
	}))
	defer srv.Close()
	_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
	if err == nil || !strings.Contains(err.Error(), "content_block_delta event") {
		t.Errorf("err = %v", err)
	}
}

func TestHeaders(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"a"},{"text":"b"}]}`))
		mustRun(t, client(srv, noStream), hello())
		mustRun(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, NoStream: noStream}), hello())
		h := srv.Requests()[0].Header
		accept := map[bool]string{false: "text/event-stream", true: "application/json"}[noStream]
		for k, want := range map[string]string{
			"X-Api-Key":         "sk-ant-test",
			"Anthropic-Version": "2023-06-01",
			"Content-Type":      "application/json",
			"Accept":            accept,
			"User-Agent":        "meka",
		} {
			if got := h.Values(k); len(got) != 1 || got[0] != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if _, ok := srv.Requests()[1].Header["X-Api-Key"]; ok {
			t.Error("x-api-key sent with no key set")
		}
	})
}

func TestBaseURL(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.RequestURI())
		http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"stop here"}}`, 404)
	}))
	defer srv.Close()
	for base, want := range map[string]string{
		srv.URL:                   "/v1/messages",
		srv.URL + "/":             "/v1/messages",
		srv.URL + "/gateway/ant":  "/gateway/ant/v1/messages",
		srv.URL + "/gateway/ant/": "/gateway/ant/v1/messages",
		srv.URL + "/g?tenant=1":   "/g/v1/messages",
	} {
		paths = nil
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: base}), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 404 || len(paths) != 1 || paths[0] != want {
			t.Errorf("base %s: requests %v, err %v; want one to %s", base, paths, err, want)
		}
	}
	for _, bad := range []string{"api.anthropic.com", "ftp://x/", "http://[::1", "/v1"} {
		rt := &counting{next: http.DefaultTransport}
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: bad, HTTPClient: &http.Client{Transport: rt}}), hello())
		if err == nil || !strings.Contains(err.Error(), "base URL") || rt.n.Load() != 0 {
			t.Errorf("base %q: err %v after %d requests, want a base URL error and none", bad, err, rt.n.Load())
		}
	}
}

// An error status comes back with the provider's own error type and
// message, as the body says them, whatever the body is.
func TestErrorStatuses(t *testing.T) {
	for _, tc := range []struct {
		status    int
		body      string
		header    http.Header
		retryable bool
		after     time.Duration
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}`, nil, false, 0},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, nil, false, 0},
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, http.Header{"Retry-After": {"7"}}, true, 7 * time.Second},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, http.Header{"Retry-After-Ms": {"250"}}, true, 250 * time.Millisecond},
		{502, "<html><body>Bad Gateway</body></html>", nil, true, 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for k, v := range tc.header {
				w.Header()[k] = v
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, tc.body+"\n")
		}))
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: model.Retry{Attempts: 1}}), hello())
		srv.Close()
		var me *model.Error
		if !errors.As(err, &me) {
			t.Errorf("%d: err = %v, want a *model.Error", tc.status, err)
			continue
		}
		if me.Status != tc.status || me.Body != tc.body || me.Retryable() != tc.retryable || me.RetryAfter != tc.after {
			t.Errorf("%d: got status %d body %q retryable %v after %v", tc.status, me.Status, me.Body, me.Retryable(), me.RetryAfter)
		}
	}
}

// The whole-response path reads what a 200 holds strictly: an error
// document is the error it names, anything else not a message fails, and
// a body cut short is a broken connection, retried.
func TestWholeResponseBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		check      func(error) bool
	}{
		{"error document", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, func(err error) bool {
			var me *model.Error
			return errors.As(err, &me) && me.Status == 529 && me.Retryable()
		}},
		{"not json", `<html>proxy login</html>`, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "proxy login")
		}},
		{"not a message", `{}`, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "not a message")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, NoStream: true, Retry: model.Retry{Attempts: 1}}), hello())
			if !tc.check(err) {
				t.Errorf("err = %v", err)
			}
		})
	}
	t.Run("cut short", func(t *testing.T) {
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Length", "1000")
			fmt.Fprint(w, `{"type":"message","content":[`)
		}))
		defer srv.Close()
		_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, NoStream: true, Retry: fast}), hello())
		var me *model.Error
		if !errors.As(err, &me) || !me.Retryable() || n.Load() != int32(fast.Attempts) {
			t.Errorf("err = %v after %d requests, want a retried connection error", err, n.Load())
		}
	})
}

func TestFirstTokenTimeout(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"late","stall":"response"},{"text":"in time"}]}`))
		c := anthropic.New(anthropic.Options{BaseURL: srv.URL, NoStream: noStream, Retry: fast,
			Timeouts: model.Timeouts{FirstToken: 50 * time.Millisecond}})
		resp, _ := mustRun(t, c, hello())
		if resp.Message.Text() != "in time" || len(srv.Requests()) != 2 {
			t.Errorf("text %q after %d requests, want the stalled one retried", resp.Message.Text(), len(srv.Requests()))
		}

		srv = modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"late","stall":"response"}]}`))
		c = anthropic.New(anthropic.Options{BaseURL: srv.URL, NoStream: noStream, Retry: model.Retry{Attempts: 1},
			Timeouts: model.Timeouts{FirstToken: 50 * time.Millisecond}})
		_, _, err := run(t, c, hello())
		var te *model.TimeoutError
		if !errors.As(err, &te) || te.Wait != "first_token_timeout" {
			t.Errorf("err = %v, want first_token_timeout", err)
		}
	})
}

// Stopping early, by breaking out of the loop or by canceling, closes the
// response body: the server sees its client go.
func TestEarlyStopClosesBody(t *testing.T) {
	for _, how := range []string{"break", "cancel"} {
		t.Run(how, func(t *testing.T) {
			gone := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, messageStart)
				fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
				fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"first\"}}\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done() // the rest never comes
				close(gone)
			}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var err error
			for ev, e := range anthropic.New(anthropic.Options{BaseURL: srv.URL}).Stream(ctx, hello()) {
				if e != nil {
					err = e
					break
				}
				if _, ok := ev.(model.TextDelta); !ok {
					continue
				}
				if how == "break" {
					break
				}
				cancel()
			}
			if how == "cancel" && !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if how == "break" && err != nil {
				t.Errorf("err = %v after a break", err)
			}
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("the server still holds the connection: the body was not closed")
			}
		})
	}
}

// The same request encodes to the same bytes every time, including a tool
// schema with many keywords beyond properties and required (the SDK wrote
// those in map order).
func TestRequestBytesStable(t *testing.T) {
	req := conversation(true)
	req.Tools = append(req.Tools, model.ToolSpec{Name: "mcp_tool", Parameters: json.RawMessage(`{
		"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b"],
		"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,
		"title":"T","description":"D","definitions":{"x":{"type":"string"}},"examples":[{"b":"x"}]}`)})
	script := `{"rounds":[` + strings.TrimSuffix(strings.Repeat(`{"text":"ok"},`, 20), ",") + `]}`
	srv := modeltest.NewServer(t, parse(t, script))
	c := client(srv, false)
	for range 20 {
		mustRun(t, c, req)
	}
	reqs := srv.Requests()
	for i, r := range reqs[1:] {
		if !bytes.Equal(r.Body, reqs[0].Body) {
			t.Fatalf("request %d differs from the first:\n%s\n%s", i+1, r.Body, reqs[0].Body)
		}
	}
	want := `"input_schema":{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"type":"object",` +
		`"$schema":"http://json-schema.org/draft-07/schema#","additionalProperties":false,"definitions":{"x":{"type":"string"}},` +
		`"description":"D","examples":[{"b":"x"}],"title":"T"},"name":"mcp_tool"}`
	if !bytes.Contains(reqs[0].Body, []byte(want)) {
		t.Errorf("schema encoded as\n%s\nwant it to contain\n%s", reqs[0].Body, want)
	}
}

// TestRequestWire pins the exact bytes of a request, field order and
// escaping included, as the SDK used to send them: a change here changes
// every cached prefix.
func TestRequestWire(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
		req := conversation(true)
		req.System = "You are <meka> & \u2028friends."
		req.Context = model.Parts{model.Text{Text: "<context/>"}}
		mustRun(t, client(srv, noStream), req)
		golden(t, map[bool]string{false: "request_stream.wire", true: "request_whole.wire"}[noStream], srv.Requests()[0].Body)
	})
}

// A gateway that ignores "stream" and answers with the whole message is
// still understood.
func TestStreamAnsweredWhole(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"whole"},`+
			`{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","stop_sequence":null,`+
			`"usage":{"input_tokens":4,"output_tokens":2,"cache_read_input_tokens":1,"cache_creation_input_tokens":0}}`)
	}))
	defer srv.Close()
	resp, events := mustRun(t, anthropic.New(anthropic.Options{BaseURL: srv.URL}), hello())
	want := []model.ToolCall{{ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}
	if resp.Message.Text() != "whole" || resp.Stop != model.StopToolUse || !reflect.DeepEqual(resp.Message.ToolCalls(), want) ||
		resp.Usage != (model.Usage{InputTokens: 4, OutputTokens: 2, CacheReadTokens: 1}) {
		t.Errorf("response = %+v", resp)
	}
	if d := sum(t, events); d.text != "whole" || string(d.calls[0].Arguments) != `{"a":1}` {
		t.Errorf("deltas = %+v", d)
	}
}

// The key must not follow a redirect to another server, since x-api-key
// is a header the HTTP client carries anywhere; a redirect on the same
// origin is followed, key and all.
func TestRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	ms := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"moved"}]}`))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away/v1/messages":
			http.Redirect(w, r, other.URL+"/v1/messages", http.StatusTemporaryRedirect)
		case "/here/v1/messages":
			http.Redirect(w, r, "/v1/messages", http.StatusPermanentRedirect)
		default:
			ms.ServeHTTP(w, r)
		}
	}))
	defer front.Close()

	_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: front.URL + "/away", APIKey: "sk-ant-secret", Retry: fast}), hello())
	if err == nil || !strings.Contains(err.Error(), "another origin") || elsewhere.Load() != 0 {
		t.Errorf("err = %v, %d requests reached the other server", err, elsewhere.Load())
	}
	resp, _ := mustRun(t, anthropic.New(anthropic.Options{BaseURL: front.URL + "/here", APIKey: "sk-ant-secret"}), hello())
	if resp.Message.Text() != "moved" || ms.Requests()[0].Header.Get("X-Api-Key") != "sk-ant-secret" {
		t.Errorf("text %q, key %q", resp.Message.Text(), ms.Requests()[0].Header.Get("X-Api-Key"))
	}
}
