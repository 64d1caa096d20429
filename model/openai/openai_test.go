package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
)

func TestText(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"Hello there, how can I help?"}]}`))
		resp, events := mustRun(t, client(srv, noStream), hello())
		if got := resp.Message.Text(); got != "Hello there, how can I help?" {
			t.Errorf("text = %q", got)
		}
		if resp.Stop != model.StopEndTurn || resp.Model != "gpt-test" {
			t.Errorf("stop %q, model %q", resp.Stop, resp.Model)
		}
		var deltas int
		for _, ev := range events {
			if _, ok := ev.(model.TextDelta); ok {
				deltas++
			}
		}
		if want := map[bool]int{false: 3, true: 1}[noStream]; deltas != want {
			t.Errorf("%d text deltas, want %d", deltas, want)
		}
		if _, ok := events[len(events)-1].(model.Completed); !ok {
			t.Errorf("last event is %T, want Completed", events[len(events)-1])
		}
		b := body(t, srv, 0)
		if srv.Requests()[0].Path != "/v1/chat/completions" {
			t.Errorf("path = %s", srv.Requests()[0].Path)
		}
		if noStream {
			if _, ok := b["stream"]; ok {
				t.Errorf("a whole-response request set stream: %v", b["stream"])
			}
		} else if b["stream"] != true || !reflect.DeepEqual(b["stream_options"], map[string]any{"include_usage": true}) {
			t.Errorf("stream = %v, stream_options = %v", b["stream"], b["stream_options"])
		}
	})
}

func TestToolCallArgumentsSplitAcrossChunks(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"Looking.","tool_calls":[
			{"id":"call_1","name":"file_read","arguments":{"path":"main.go","limit":200}},
			{"id":"call_2","name":"list_dir"}]}]}`))
		resp, events := mustRun(t, client(srv, noStream), hello())
		want := []model.ToolCall{
			{ID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"main.go","limit":200}`)},
			{ID: "call_2", Name: "list_dir", Arguments: json.RawMessage(`{}`)},
		}
		if got := resp.Message.ToolCalls(); !reflect.DeepEqual(got, want) {
			t.Errorf("calls = %+v\nwant %+v", got, want)
		}
		if resp.Stop != model.StopToolUse {
			t.Errorf("stop = %q", resp.Stop)
		}
		// The deltas: the first of a call names it, the rest add up to its
		// arguments.
		args := map[int]string{}
		pieces := map[int]int{}
		for _, ev := range events {
			d, ok := ev.(model.ToolCallDelta)
			if !ok {
				continue
			}
			if pieces[d.Index] == 0 && d.ID == "" {
				t.Errorf("first delta of call %d has no id: %+v", d.Index, d)
			}
			pieces[d.Index]++
			args[d.Index] += d.Arguments
		}
		if args[0] != `{"path":"main.go","limit":200}` {
			t.Errorf("argument deltas of call 0 add up to %q", args[0])
		}
		if !noStream && pieces[0] < 3 {
			t.Errorf("call 0 came in %d deltas, want its arguments split", pieces[0])
		}
	})
}

func TestUsage(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok","usage":
			{"input_tokens":100,"output_tokens":20,"cache_read_tokens":900,"cache_write_tokens":50}}]}`))
		resp, _ := mustRun(t, client(srv, noStream), hello())
		want := model.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 900, CacheWriteTokens: 50}
		if resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", resp.Usage, want)
		}
	})
}

func TestStopReasons(t *testing.T) {
	for _, stop := range []model.StopReason{model.StopEndTurn, model.StopToolUse, model.StopMaxTokens, model.StopRefusal} {
		modes(t, func(t *testing.T, noStream bool) {
			calls := ""
			if stop == model.StopToolUse {
				calls = `,"tool_calls":[{"id":"c","name":"x"}]`
			}
			srv := modeltest.NewServer(t, parse(t, fmt.Sprintf(`{"rounds":[{"text":"t","stop":%q%s}]}`, stop, calls)))
			resp, _ := mustRun(t, client(srv, noStream), hello())
			if resp.Stop != stop {
				t.Errorf("stop = %q, want %q", resp.Stop, stop)
			}
		})
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[
			{"error":{"status":429,"body":"Rate limit reached","retry_after":"1s"}},
			{"error":{"status":503,"body":"overloaded"}},
			{"text":"made it"}]}`))
		resp, _ := mustRun(t, client(srv, noStream), hello())
		if resp.Message.Text() != "made it" || len(srv.Requests()) != 3 {
			t.Errorf("text %q after %d requests, want success on the third", resp.Message.Text(), len(srv.Requests()))
		}
	})
}

func TestRetryBounded(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[
		{"error":{"status":429,"body":"slow down","retry_after":"1s"}},
		{"error":{"status":429,"body":"slow down","retry_after":"1s"}},
		{"error":{"status":429,"body":"slow down","retry_after":"1s"}},
		{"text":"never reached"}]}`))
	_, events, err := run(t, client(srv, false), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 429 || me.Provider != "openai" || !me.Retryable() {
		t.Fatalf("err = %#v, want the last 429", err)
	}
	if me.RetryAfter != time.Second || !strings.Contains(me.Body, "slow down") {
		t.Errorf("retry after %v, body %q", me.RetryAfter, me.Body)
	}
	if len(events) != 0 || len(srv.Requests()) != fast.Attempts {
		t.Errorf("%d events, %d requests; want none and %d", len(events), len(srv.Requests()), fast.Attempts)
	}
}

// TestRetryAfterHonoured waits in fake time, so the wait the server asked
// for can be measured exactly.
func TestRetryAfterHonoured(t *testing.T) {
	for _, tc := range []struct {
		name, after string
		max, want   time.Duration
	}{
		{"seconds", "3s", 0, 3 * time.Second},
		// synctest's clock starts at midnight UTC, 2000-01-01.
		{"http date", "Sat, 01 Jan 2000 00:00:05 GMT", 0, 5 * time.Second},
		{"capped by Max", "60s", 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := modeltest.NewHandler(parse(t, fmt.Sprintf(`{"rounds":[{"error":{"status":429,"retry_after":%q}},{"text":"ok"}]}`, tc.after)))
				c := openai.New(openai.Options{
					BaseURL:    "http://modeltest.invalid/v1",
					HTTPClient: &http.Client{Transport: h.Transport()},
					Retry:      model.Retry{Max: tc.max},
				})
				start := time.Now()
				mustRun(t, c, hello())
				if got := time.Since(start); got != tc.want {
					t.Errorf("waited %v, want %v", got, tc.want)
				}
			})
		})
	}
}

func TestCanceledWhileWaitingToRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := modeltest.NewHandler(parse(t, `{"rounds":[{"error":{"status":429,"retry_after":"10s"}},{"text":"too late"}]}`))
		c := openai.New(openai.Options{BaseURL: "http://modeltest.invalid/v1", HTTPClient: &http.Client{Transport: h.Transport()}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		start := time.Now()
		_, err := model.Collect(c.Stream(ctx, hello()), nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("after %v: err = %v, want the deadline", time.Since(start), err)
		}
		if len(h.Requests()) != 1 {
			t.Errorf("%d requests, want no retry after the deadline", len(h.Requests()))
		}
	})
}

func TestLongErrorBody(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		long := strings.Repeat("context length exceeded; ", 300) // > 4 KiB
		srv := modeltest.NewServer(t, parse(t, fmt.Sprintf(`{"rounds":[{"error":{"status":400,"body":%q}},{"text":"unused"}]}`, long)))
		_, _, err := run(t, client(srv, noStream), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 400 {
			t.Fatalf("err = %v, want a 400 *model.Error", err)
		}
		if !strings.Contains(me.Body, long) {
			t.Errorf("body was not kept whole: %d bytes", len(me.Body))
		}
		d := me.Display()
		if len(d) > model.DisplayCap+200 || !strings.Contains(d, "more bytes cut") || !strings.HasPrefix(d, "openai returned HTTP 400: ") {
			t.Errorf("display is %d bytes: %.200s…", len(d), d)
		}
		if me.Retryable() || len(srv.Requests()) != 1 {
			t.Errorf("a 400 was retried: %d requests", len(srv.Requests()))
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // nothing listens there now
	rt := &counting{next: http.DefaultTransport}
	c := openai.New(openai.Options{BaseURL: base, HTTPClient: &http.Client{Transport: rt}, Retry: fast})
	_, _, err := run(t, c, hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 0 || me.Err == nil || !me.Retryable() {
		t.Fatalf("err = %#v, want a connection *model.Error", err)
	}
	if got := rt.n.Load(); got != int32(fast.Attempts) {
		t.Errorf("%d attempts, want %d", got, fast.Attempts)
	}
}

func TestDroppedConnectionRetried(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"error":{"status":0}},{"text":"second try"}]}`))
	resp, _ := mustRun(t, client(srv, false), hello())
	if resp.Message.Text() != "second try" {
		t.Errorf("text = %q", resp.Message.Text())
	}
}

// TestNoRetryAfterOutput: once an event is out, a broken stream is the
// caller's error, not a retry.
func TestNoRetryAfterOutput(t *testing.T) {
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"partial"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	c := openai.New(openai.Options{BaseURL: srv.URL, Retry: fast})
	_, events, err := run(t, c, hello())
	var me *model.Error
	if !errors.As(err, &me) || !me.Retryable() {
		t.Errorf("err = %v, want a connection *model.Error", err)
	}
	if len(events) != 1 || n != 1 {
		t.Errorf("%d events, %d requests; want the text and no retry", len(events), n)
	}
}

func TestStreamCutShort(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"half"}}]}`+"\n\n")
	}))
	defer srv.Close()
	_, _, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, Retry: fast}), hello())
	if !errors.Is(err, model.ErrNoResponse) {
		t.Errorf("err = %v, want ErrNoResponse", err)
	}
}

func TestErrorEventInStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"error":{"message":"model overloaded","code":503}}`+"\n\n")
	}))
	defer srv.Close()
	rt := &counting{next: http.DefaultTransport}
	_, _, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: rt}, Retry: fast}), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 503 || !strings.Contains(me.Body, "model overloaded") {
		t.Fatalf("err = %#v", err)
	}
	if rt.n.Load() != int32(fast.Attempts) {
		t.Errorf("%d attempts: an error before any output is retried", rt.n.Load())
	}
}

func TestCompatibleServerQuirks(t *testing.T) {
	// Every call at index 0 with its own id, and "stop" after tool calls,
	// as some OpenAI-compatible servers send them.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range []string{
			`{"choices":[{"index":0,"delta":{"reasoning":"think "}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"one","arguments":"{\"n\":1}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"two","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", c)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	resp, _ := mustRun(t, openai.New(openai.Options{BaseURL: srv.URL}), hello())
	calls := resp.Message.ToolCalls()
	if len(calls) != 2 || calls[0].ID != "a" || calls[1].ID != "b" || string(calls[1].Arguments) != "{}" {
		t.Errorf("calls = %+v", calls)
	}
	if resp.Stop != model.StopToolUse {
		t.Errorf("stop = %q, want tool_use", resp.Stop)
	}
	if th, ok := resp.Message.Parts[0].(model.Thinking); !ok || th.Text != "think " || th.Provider != "openai" {
		t.Errorf("first part = %#v, want thinking tagged openai", resp.Message.Parts[0])
	}
}

func TestBreakAndCancel(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"one two three four"},{"text":"one two three four"}]}`))
	c := client(srv, false)
	n := 0
	for range c.Stream(t.Context(), hello()) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("%d events after break", n)
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
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestAuthorization(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"a"},{"text":"b"}]}`))
	mustRun(t, openai.New(openai.Options{BaseURL: srv.URL}), hello())
	mustRun(t, openai.New(openai.Options{BaseURL: srv.URL, APIKey: "sk-test"}), hello())
	reqs := srv.Requests()
	if got := reqs[0].Header.Get("Authorization"); got != "" {
		t.Errorf("without a key, Authorization = %q", got)
	}
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if reqs[0].Path != "/chat/completions" {
		t.Errorf("path = %s", reqs[0].Path)
	}
}

func TestMaxTokensField(t *testing.T) {
	for _, tc := range []struct{ base, field string }{
		{"https://api.openai.com/v1", "max_completion_tokens"},
		{"http://localhost:11434/v1", "max_tokens"},
	} {
		h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"a"},{"text":"b"}]}`))
		c := openai.New(openai.Options{BaseURL: tc.base, HTTPClient: &http.Client{Transport: h.Transport()}, MaxOutputTokens: 1000})
		mustRun(t, c, hello())
		req := hello()
		req.MaxOutputTokens = 50
		mustRun(t, c, req)
		for i, want := range []float64{1000, 50} {
			if got := body(t, h, i)[tc.field]; got != want {
				t.Errorf("%s: request %d %s = %v, want %v", tc.base, i, tc.field, got, want)
			}
		}
	}
}
