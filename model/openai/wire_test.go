package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
)

// What the SDK used to do for the adapter, and what the adapter now does
// itself, on the wire.

func TestHeaders(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"a"}]}`))
		mustRun(t, openai.New(openai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", NoStream: noStream}), hello())
		h := srv.Requests()[0].Header
		accept := map[bool]string{false: "text/event-stream", true: "application/json"}[noStream]
		for k, want := range map[string]string{
			"Authorization": "Bearer sk-test",
			"Content-Type":  "application/json",
			"Accept":        accept,
		} {
			if got := h.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if ua := h.Get("User-Agent"); ua != "meka" {
			t.Errorf("User-Agent = %q, want meka", ua)
		}
		for k := range h {
			if strings.HasPrefix(k, "X-Stainless") || strings.HasPrefix(k, "Openai") {
				t.Errorf("header %s sent", k)
			}
		}
	})
}

// urlRecorder records the URL of each request and answers with a stream.
type urlRecorder struct{ urls []string }

func (u *urlRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	u.urls = append(u.urls, r.URL.String())
	return modeltest.Replay("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n").RoundTrip(r)
}

func TestBaseURLJoining(t *testing.T) {
	for base, want := range map[string]string{
		"":                                 "https://api.openai.com/v1/chat/completions",
		"http://127.0.0.1:11434/v1":        "http://127.0.0.1:11434/v1/chat/completions",
		"http://127.0.0.1:11434/v1/":       "http://127.0.0.1:11434/v1/chat/completions",
		"http://127.0.0.1:8080":            "http://127.0.0.1:8080/chat/completions",
		"https://openrouter.ai/api/v1":     "https://openrouter.ai/api/v1/chat/completions",
		"https://gw.example/openai/v1?x=1": "https://gw.example/openai/v1/chat/completions",
	} {
		rec := &urlRecorder{}
		mustRun(t, openai.New(openai.Options{BaseURL: base, HTTPClient: &http.Client{Transport: rec}}), hello())
		if len(rec.urls) != 1 || rec.urls[0] != want {
			t.Errorf("base %q: requested %v, want %s", base, rec.urls, want)
		}
	}
}

func TestBadBaseURL(t *testing.T) {
	for _, base := range []string{"localhost:11434/v1", "http://[::1", "ftp://example.com/v1", "http:///v1"} {
		rec := &urlRecorder{}
		_, _, err := run(t, openai.New(openai.Options{BaseURL: base, HTTPClient: &http.Client{Transport: rec}}), hello())
		if err == nil || !strings.Contains(err.Error(), "base URL") || len(rec.urls) != 0 {
			t.Errorf("base %q: err = %v after %d requests, want a base URL error and none", base, err, len(rec.urls))
		}
	}
}

// The key must not follow a redirect to another server; a redirect on the
// same origin is followed, key and all.
func TestRedirects(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"moved"}]}`))
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away/chat/completions":
			http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		case "/here/chat/completions":
			http.Redirect(w, r, "/v1/chat/completions", http.StatusPermanentRedirect)
		case "/v1/chat/completions":
			// The same origin: pass it on to the model server.
			r.URL.Scheme, r.URL.Host, r.RequestURI = "http", strings.TrimPrefix(srv.URL, "http://"), ""
			res, err := http.DefaultTransport.RoundTrip(r)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			w.Header().Set("Content-Type", res.Header.Get("Content-Type"))
			io.Copy(w, res.Body)
		}
	}))
	defer front.Close()

	_, _, err := run(t, openai.New(openai.Options{BaseURL: front.URL + "/away", APIKey: "sk-secret", Retry: fast}), hello())
	if err == nil || !strings.Contains(err.Error(), "another origin") || elsewhere.Load() != 0 {
		t.Errorf("err = %v, %d requests reached the other server", err, elsewhere.Load())
	}
	resp, _ := mustRun(t, openai.New(openai.Options{BaseURL: front.URL + "/here", APIKey: "sk-secret"}), hello())
	if resp.Message.Text() != "moved" || srv.Requests()[0].Header.Get("Authorization") != "Bearer sk-secret" {
		t.Errorf("text %q, auth %q", resp.Message.Text(), srv.Requests()[0].Header.Get("Authorization"))
	}
}

// An error status keeps the provider's JSON (type, code and message) in
// Body whole, and its wait from retry-after-ms or Retry-After.
func TestErrorStatus(t *testing.T) {
	modes(t, func(t *testing.T, noStream bool) {
		srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"error":{"status":401,"body":"Incorrect API key provided"}},{"text":"unused"}]}`))
		_, _, err := run(t, client(srv, noStream), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 401 || me.Retryable() || me.Provider != "openai" {
			t.Fatalf("err = %#v, want a 401 that is not retried", err)
		}
		for _, want := range []string{`"message":"Incorrect API key provided"`, `"type":"invalid_request_error"`, `"code":"invalid_api_key"`} {
			if !strings.Contains(me.Body, want) {
				t.Errorf("body %s lacks %s", me.Body, want)
			}
		}
		if len(srv.Requests()) != 1 {
			t.Errorf("%d requests", len(srv.Requests()))
		}
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After-Ms", "1500")
		w.Header().Set("Retry-After", "9")
		http.Error(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, http.StatusTooManyRequests)
	}))
	defer srv.Close()
	_, _, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, Retry: model.Retry{Attempts: 1}}), hello())
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 429 || me.RetryAfter != 1500*time.Millisecond {
		t.Errorf("err = %#v, want a 429 asking for 1.5s", err)
	}
}

// blockingBody is a reply body whose reads ignore every context: only
// Close ends a blocked read, as with some transports.
type blockingBody struct {
	*io.PipeReader
	closed chan struct{}
}

func (b *blockingBody) Close() error {
	select {
	case <-b.closed:
	default:
		close(b.closed)
	}
	return b.PipeReader.Close()
}

type pipeTransport struct{ body *blockingBody }

func (p pipeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: p.body, Request: r}, nil
}

func newPipe() (*blockingBody, *io.PipeWriter) {
	pr, pw := io.Pipe()
	return &blockingBody{PipeReader: pr, closed: make(chan struct{})}, pw
}

// Canceling the context closes the body, so a read blocked in a transport
// that does not watch the context still ends. In a synctest bubble a read
// that never ends fails the test as a deadlock rather than hanging it.
func TestCancelClosesBody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body, pw := newPipe()
		go func() {
			fmt.Fprint(pw, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"first\"}}]}\n\n")
		}()
		c := openai.New(openai.Options{BaseURL: "http://pipe.invalid", HTTPClient: &http.Client{Transport: pipeTransport{body}}})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var err error
		var texts int
		for ev, e := range c.Stream(ctx, hello()) {
			if e != nil {
				err = e
				break
			}
			if _, ok := ev.(model.TextDelta); ok {
				texts++
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) || texts != 1 {
			t.Errorf("err = %v after %d texts, want the cancellation after one", err, texts)
		}
		select {
		case <-body.closed:
		default:
			t.Error("body not closed")
		}
	})
}

// [DONE] ends the reply: a server that keeps the connection open after it
// is not waited for.
func TestDoneEndsTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body, pw := newPipe()
		go func() {
			fmt.Fprint(pw, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"all\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}()
		c := openai.New(openai.Options{BaseURL: "http://pipe.invalid", HTTPClient: &http.Client{Transport: pipeTransport{body}}})
		resp, _ := mustRun(t, c, hello())
		if resp.Message.Text() != "all" {
			t.Errorf("text = %q", resp.Message.Text())
		}
		<-body.closed
	})
}

// sseServer answers every request with body as an event stream, and
// counts the requests.
func sseServer(t *testing.T, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	n := new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, n
}

func TestStreamEnds(t *testing.T) {
	const text = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
	const finish = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"finish and done", text + finish + "data: [DONE]\n\n", true},
		// Some compatible servers close the stream without [DONE].
		{"finish without done", text + finish, true},
		{"done without finish", text + "data: [DONE]\n\n", false},
		{"nothing", "", false},
		{"finish cut before its blank line", text + strings.TrimSuffix(finish, "\n"), false},
		{"events after done are not read", text + finish + "data: [DONE]\n\ndata: not json\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := sseServer(t, tc.body)
			resp, _, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, Retry: fast}), hello())
			if tc.ok && (err != nil || resp.Message.Text() != "hi") {
				t.Errorf("err = %v", err)
			}
			if !tc.ok && !errors.Is(err, model.ErrNoResponse) {
				t.Errorf("err = %v, want ErrNoResponse", err)
			}
		})
	}
}

// Events a Chat Completions client does not know are skipped, as are
// comments, fields it does not read and choices past the first.
func TestUnknownEventsIgnored(t *testing.T) {
	srv, _ := sseServer(t, strings.Join([]string{
		": keep-alive",
		"",
		"event: ping",
		`data: {"type":"ping"}`,
		"",
		"id: 7",
		"retry: 3000",
		`data: {"id":"c","object":"chat.completion.chunk","model":"m","system_fingerprint":"fp","obfuscation":"abc","choices":[{"index":0,"delta":{"role":"assistant","content":"one","annotations":[]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		"",
		`data: {"choices":[{"index":1,"delta":{"content":"from n=2"}},{"index":0,"delta":{"content":" two","audio":{"id":"x"}}}]}`,
		"",
		"event: response.created",
		`data: {"choices":[{"index":0,"delta":{"content":"not chat"}}]}`,
		"",
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"future_field":{"a":[1,2]}}`,
		"",
		"data: [DONE]",
		"", "",
	}, "\n"))
	resp, _ := mustRun(t, openai.New(openai.Options{BaseURL: srv.URL}), hello())
	if resp.Message.Text() != "one two" || resp.Model != "m" || resp.Stop != model.StopEndTurn {
		t.Errorf("text %q, model %q, stop %q", resp.Message.Text(), resp.Model, resp.Stop)
	}
}

// A field of an unexpected type reads as absent rather than failing the
// reply, as the SDK read it; a count may come as a float.
func TestOddFieldTypes(t *testing.T) {
	srv, _ := sseServer(t, `data: {"model":7,"choices":[{"index":0,"delta":{"content":"ok","reasoning":{"effort":"low"},"refusal":null}}]}`+"\n\n"+
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12.0,"completion_tokens":"3","prompt_tokens_details":null}}`+"\n\ndata: [DONE]\n\n")
	resp, _ := mustRun(t, openai.New(openai.Options{BaseURL: srv.URL}), hello())
	if resp.Message.Text() != "ok" || len(resp.Message.Parts) != 1 || resp.Usage != (model.Usage{InputTokens: 12}) {
		t.Errorf("parts %+v, usage %+v", resp.Message.Parts, resp.Usage)
	}
}

// An event that is not JSON is a broken server, not a passing fault: it
// fails the call with the event in the error, and is not retried.
func TestUndecodableEvent(t *testing.T) {
	srv, n := sseServer(t, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {choices: nope}\n\n")
	_, events, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, Retry: fast}), hello())
	var me *model.Error
	if err == nil || errors.As(err, &me) || !strings.Contains(err.Error(), "{choices: nope}") {
		t.Errorf("err = %v", err)
	}
	if len(events) != 1 || n.Load() != 1 {
		t.Errorf("%d events, %d requests", len(events), n.Load())
	}
}

func TestErrorEvents(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		errText    string
	}{
		{"named error event", "event: error\ndata: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n", 0, "server_error: boom"},
		{"code as a string", "data: {\"error\":{\"message\":\"rate limited\",\"code\":\"429\"}}\n\n", 429, ""},
		{"code not a status", "data: {\"error\":{\"message\":\"x\",\"code\":\"model_not_found\"}}\n\n", 0, "error event in stream: x"},
		{"bare string", "data: {\"error\":\"upstream went away\"}\n\n", 0, "upstream went away"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := sseServer(t, tc.body)
			_, _, err := run(t, openai.New(openai.Options{BaseURL: srv.URL, Retry: fast}), hello())
			var me *model.Error
			if !errors.As(err, &me) || me.Status != tc.status || !me.Retryable() || !strings.HasPrefix(me.Body, `{"error":`) {
				t.Fatalf("err = %#v", err)
			}
			if tc.errText != "" && (me.Err == nil || !strings.Contains(me.Err.Error(), tc.errText)) {
				t.Errorf("err %v lacks %q", me.Err, tc.errText)
			}
			if n.Load() != int32(fast.Attempts) {
				t.Errorf("%d requests: an error before any output is retried", n.Load())
			}
		})
	}
	// A null error is no error.
	srv, _ := sseServer(t, "data: {\"error\":null,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"},\"finish_reason\":\"stop\"}]}\n\n")
	if resp, _ := mustRun(t, openai.New(openai.Options{BaseURL: srv.URL}), hello()); resp.Message.Text() != "fine" {
		t.Errorf("text %q", resp.Message.Text())
	}
}

// Some servers answer 200 with an error body, or a whole JSON reply to a
// request that asked for a stream.
func TestWholeReplies(t *testing.T) {
	json := func(body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	whole := json(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
	modes(t, func(t *testing.T, noStream bool) {
		resp, events := mustRun(t, openai.New(openai.Options{BaseURL: whole.URL, NoStream: noStream}), hello())
		if resp.Message.Text() != "whole" || len(resp.Message.ToolCalls()) != 1 || resp.Stop != model.StopToolUse || resp.Usage.InputTokens != 5 || len(events) != 3 {
			t.Errorf("resp %+v after %d events", resp, len(events))
		}
	})
	errBody := json(`{"error":{"message":"model is loading","code":503}}`)
	modes(t, func(t *testing.T, noStream bool) {
		_, _, err := run(t, openai.New(openai.Options{BaseURL: errBody.URL, NoStream: noStream, Retry: model.Retry{Attempts: 1}}), hello())
		var me *model.Error
		if !errors.As(err, &me) || me.Status != 503 || !strings.Contains(me.Body, "model is loading") {
			t.Errorf("err = %#v", err)
		}
	})
	bad := json(`{"choices":`)
	_, _, err := run(t, openai.New(openai.Options{BaseURL: bad.URL, NoStream: true, Retry: fast}), hello())
	if err == nil || !strings.Contains(err.Error(), "read openai response") {
		t.Errorf("err = %v", err)
	}
}
