package anthropic_test

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
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
)

func TestText(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"Hello there, how can I help?"}]}`))
		resp, events := mustRun(t, client(srv, noStream), hello())
		if got := resp.Message.Text(); got != "Hello there, how can I help?" {
			t.Errorf("text = %q", got)
		}
		if resp.Stop != model.StopEndTurn || resp.Model != "claude-test" {
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
		rec := srv.Requests()[0]
		if rec.Path != "/v1/messages" || rec.Header.Get("X-Api-Key") != "sk-ant-test" || rec.Header.Get("Anthropic-Version") == "" {
			t.Errorf("path %s, headers %v", rec.Path, rec.Header)
		}
		b := body(t, srv, 0)
		if _, ok := b["stream"]; ok == noStream {
			t.Errorf("stream = %v with NoStream %v", b["stream"], noStream)
		}
		if b["max_tokens"] != float64(anthropic.DefaultMaxOutputTokens) {
			t.Errorf("max_tokens = %v", b["max_tokens"])
		}
	})
}

func TestToolCallArgumentsSplitAcrossChunks(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"Looking.","tool_calls":[
			{"id":"toolu_1","name":"file_read","arguments":{"path":"main.go","limit":200}},
			{"id":"toolu_2","name":"list_dir"}]}]}`))
		resp, events := mustRun(t, client(srv, noStream), hello())
		want := []model.ToolCall{
			{ID: "toolu_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"main.go","limit":200}`)},
			{ID: "toolu_2", Name: "list_dir", Arguments: json.RawMessage(`{}`)},
		}
		if got := resp.Message.ToolCalls(); !reflect.DeepEqual(got, want) {
			t.Errorf("calls = %+v\nwant %+v", got, want)
		}
		if resp.Stop != model.StopToolUse {
			t.Errorf("stop = %q", resp.Stop)
		}
		args := map[int]string{}
		pieces := map[int]int{}
		for _, ev := range events {
			d, ok := ev.(model.ToolCallDelta)
			if !ok {
				continue
			}
			if pieces[d.Index] == 0 && (d.ID == "" || d.Name == "") {
				t.Errorf("first delta of call %d does not name it: %+v", d.Index, d)
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
			{"error":{"status":429,"body":"rate limited","retry_after":"1s"}},
			{"error":{"status":529,"body":"Overloaded"}},
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
	if !errors.As(err, &me) || me.Status != 429 || me.Provider != "anthropic" || !me.Retryable() {
		t.Fatalf("err = %#v, want the last 429", err)
	}
	if me.RetryAfter != time.Second || !strings.Contains(me.Body, `"rate_limit_error"`) || !strings.Contains(me.Body, "slow down") {
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
				c := anthropic.New(anthropic.Options{
					BaseURL:    "http://modeltest.invalid",
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
		c := anthropic.New(anthropic.Options{BaseURL: "http://modeltest.invalid", HTTPClient: &http.Client{Transport: h.Transport()}})
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
		long := strings.Repeat("prompt is too long; ", 300) // > 4 KiB
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
		if len(d) > model.DisplayCap+200 || !strings.Contains(d, "more bytes cut") || !strings.HasPrefix(d, "anthropic returned HTTP 400: ") {
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
	c := anthropic.New(anthropic.Options{BaseURL: base, HTTPClient: &http.Client{Transport: rt}, Retry: fast})
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

const messageStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"

// TestNoRetryAfterOutput: once an event is out, a broken stream is the
// caller's error, not a retry.
func TestNoRetryAfterOutput(t *testing.T) {
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, messageStart)
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"partial\"}}\n\n")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	_, events, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
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
		fmt.Fprint(w, messageStart)
	}))
	defer srv.Close()
	_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
	if !errors.Is(err, model.ErrNoResponse) {
		t.Errorf("err = %v, want ErrNoResponse", err)
	}
}

func TestErrorEventInStream(t *testing.T) {
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, messageStart)
		if n == 1 {
			fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
			return
		}
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	defer srv.Close()
	resp, _ := mustRun(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: fast}), hello())
	if n != 2 || resp.Stop != model.StopEndTurn {
		t.Errorf("%d requests, stop %q: an overloaded stream before any output is retried", n, resp.Stop)
	}

	one := model.Retry{Attempts: 1}
	n = 0
	_, _, err := run(t, anthropic.New(anthropic.Options{BaseURL: srv.URL, Retry: one}), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 529 || !strings.Contains(me.Body, "Overloaded") {
		t.Fatalf("err = %#v, want a 529 from the error event", err)
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

func TestMaxTokensAndThinkingBudget(t *testing.T) {
	h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"a"},{"text":"b"},{"text":"c"}]}`))
	hc := &http.Client{Transport: h.Transport()}
	c := anthropic.New(anthropic.Options{BaseURL: "http://x.invalid", HTTPClient: hc, MaxOutputTokens: 1000})
	mustRun(t, c, hello())
	req := hello()
	req.MaxOutputTokens = 50
	mustRun(t, c, req)
	thinking := anthropic.New(anthropic.Options{BaseURL: "http://x.invalid", HTTPClient: hc, MaxOutputTokens: 1000, ThinkingBudget: 4000})
	mustRun(t, thinking, hello())
	for i, want := range []float64{1000, 50, 4000 + anthropic.DefaultMaxOutputTokens} {
		if got := body(t, h, i)["max_tokens"]; got != want {
			t.Errorf("request %d max_tokens = %v, want %v", i, got, want)
		}
	}
	if got := body(t, h, 2)["thinking"]; !reflect.DeepEqual(got, map[string]any{"type": "enabled", "budget_tokens": float64(4000)}) {
		t.Errorf("thinking = %v", got)
	}
	if _, ok := body(t, h, 0)["thinking"]; ok {
		t.Error("thinking sent without a budget")
	}
}
