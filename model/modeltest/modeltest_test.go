package modeltest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

var update = flag.Bool("update", false, "rewrite golden files")

const full = `{"rounds":[{"thinking":"Plan: read it.","text":"Reading main.go now.",
	"tool_calls":[{"id":"call_1","name":"file_read","arguments":{"path":"main.go","offset":10}},{"id":"call_2","name":"list"}],
	"usage":{"input_tokens":100,"output_tokens":20,"cache_read_tokens":900,"cache_write_tokens":50}}]}`

func newServer(t *testing.T, s string) *modeltest.Server {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.NewServer(t, sc)
}

func post(t *testing.T, srv *modeltest.Server, path, body string) *http.Response {
	t.Helper()
	res, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

type event struct {
	name string
	data string
}

// events splits a server-sent event stream.
func events(t *testing.T, b []byte) []event {
	t.Helper()
	var out []event
	var cur event
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data == "" {
				t.Fatalf("event without data in %q", b)
			}
			out = append(out, cur)
			cur = event{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if cur.data != "" {
		t.Fatalf("stream does not end with a blank line")
	}
	return out
}

func TestOpenAIStream(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1/chat/completions", `{"model":"gpt-x","stream":true,"stream_options":{"include_usage":true}}`)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	b := readAll(t, res.Body)
	golden(t, "openai_stream.golden", b)

	evs := events(t, b)
	if evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("last event = %q, want [DONE]", evs[len(evs)-1].data)
	}
	var args []string
	var usage map[string]any
	for _, ev := range evs[:len(evs)-1] {
		var c struct {
			Object  string
			Model   string
			Usage   map[string]any
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    *int
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.data, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "gpt-x" {
			t.Errorf("chunk object %q model %q", c.Object, c.Model)
		}
		if c.Usage != nil {
			usage = c.Usage
			if len(c.Choices) != 0 {
				t.Error("the usage chunk has choices")
			}
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil {
					t.Errorf("tool call delta without index: %s", ev.data)
				}
				if *tc.Index == 0 && tc.Function.Arguments != "" {
					args = append(args, tc.Function.Arguments)
				}
			}
		}
	}
	if len(args) < 2 || strings.Join(args, "") != `{"path":"main.go","offset":10}` || json.Valid([]byte(args[0])) {
		t.Errorf("arguments of call 0 came as %q, want pieces that are not JSON alone", args)
	}
	if usage["prompt_tokens"] != float64(1050) || usage["completion_tokens"] != float64(20) {
		t.Errorf("usage = %v", usage)
	}

	// Without include_usage, no chunk carries usage.
	res = post(t, srv, "/chat/completions", `{"stream":true}`)
	if bytes.Contains(readAll(t, res.Body), []byte("usage")) {
		t.Error("usage sent without include_usage")
	}
}

func TestOpenAIJSON(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1/chat/completions", `{"model":"gpt-x"}`)
	if res.Header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", res.Header.Get("Content-Type"))
	}
	golden(t, "openai.golden.json", readAll(t, res.Body))
}

func TestAnthropicStream(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1/messages", `{"model":"claude-x","stream":true}`)
	b := readAll(t, res.Body)
	golden(t, "anthropic_stream.golden", b)

	var names []string
	var partial []string
	for _, ev := range events(t, b) {
		var d struct {
			Type  string
			Delta struct {
				Type        string
				PartialJSON string `json:"partial_json"`
			}
		}
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
			t.Fatal(err)
		}
		if d.Type != ev.name {
			t.Errorf("event %q carries type %q", ev.name, d.Type)
		}
		if len(names) == 0 || names[len(names)-1] != ev.name {
			names = append(names, ev.name)
		}
		if d.Delta.Type == "input_json_delta" && len(partial) < 3 {
			partial = append(partial, d.Delta.PartialJSON)
		}
	}
	want := "message_start,ping,content_block_start,content_block_delta,content_block_stop," + // thinking
		"content_block_start,content_block_delta,content_block_stop," + // text
		"content_block_start,content_block_delta,content_block_stop," + // call 1
		"content_block_start,content_block_delta,content_block_stop," + // call 2
		"message_delta,message_stop"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	if strings.Join(partial, "") != `{"path":"main.go","offset":10}` || len(partial) < 2 {
		t.Errorf("input_json_delta pieces = %q", partial)
	}
}

func TestAnthropicJSON(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1/messages", `{"model":"claude-x"}`)
	golden(t, "anthropic.golden.json", readAll(t, res.Body))
}

func TestErrorRounds(t *testing.T) {
	srv := newServer(t, `{"rounds":[
		{"error":{"status":429,"body":"slow down","retry_after":"1500ms"}},
		{"error":{"status":529,"body":"Overloaded"}},
		{"error":{"status":400,"body":"{\"error\":{\"message\":\"verbatim\"}}"}},
		{"error":{"status":503,"retry_after":"Sat, 01 Jan 2000 00:00:05 GMT"}}]}`)
	for _, tc := range []struct {
		path, retryAfter, body string
		status                 int
	}{
		{"/v1/chat/completions", "2", `{"error":{"code":"rate_limit_exceeded","message":"slow down","param":null,"type":"requests"}}`, 429},
		{"/v1/messages", "", `{"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}`, 529},
		{"/v1/messages", "", `{"error":{"message":"verbatim"}}`, 400},
		{"/v1/messages", "Sat, 01 Jan 2000 00:00:05 GMT", `{"error":{"message":"","type":"api_error"},"type":"error"}`, 503},
	} {
		res := post(t, srv, tc.path, `{"stream":true}`)
		if res.StatusCode != tc.status || res.Header.Get("Retry-After") != tc.retryAfter {
			t.Errorf("status %d, Retry-After %q; want %d, %q", res.StatusCode, res.Header.Get("Retry-After"), tc.status, tc.retryAfter)
		}
		if got := string(bytes.TrimSpace(readAll(t, res.Body))); got != tc.body {
			t.Errorf("body = %s\nwant %s", got, tc.body)
		}
	}
}

func TestDroppedConnection(t *testing.T) {
	srv := newServer(t, `{"rounds":[{"error":{"status":0}},{"text":"ok"}]}`)
	_, err := srv.Client().Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("a status 0 round answered")
	}
	res := post(t, srv, "/v1/messages", `{}`)
	if res.StatusCode != 200 {
		t.Errorf("next round: status %d", res.StatusCode)
	}
}

func TestExhaustedAndInvalid(t *testing.T) {
	srv := newServer(t, `{"rounds":[{"text":"only"}]}`)
	if res := post(t, srv, "/v1/messages", `{not json`); res.StatusCode != 400 {
		t.Errorf("malformed body: status %d", res.StatusCode)
	}
	if srv.Remaining() != 1 {
		t.Error("a malformed request used up a round")
	}
	post(t, srv, "/v1/messages", `{}`)
	res := post(t, srv, "/v1/chat/completions", `{}`)
	b := readAll(t, res.Body)
	if res.StatusCode != 400 || !bytes.Contains(b, []byte("past the end of the script (it has 1 rounds)")) {
		t.Errorf("status %d, body %s", res.StatusCode, b)
	}
	if res := post(t, srv, "/v1/models", `{}`); res.StatusCode != 404 {
		t.Errorf("unknown path: status %d", res.StatusCode)
	}
	res, err := srv.Client().Get(srv.URL + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", res.StatusCode)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || string(reqs[0].Body) != `{not json` || reqs[2].Path != "/v1/chat/completions" {
		t.Errorf("recorded %+v", reqs)
	}
	if reqs[1].Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers not recorded: %v", reqs[1].Header)
	}
}

func TestTransport(t *testing.T) {
	sc, err := script.Parse([]byte(`{"rounds":[{"error":{"status":0}},{"text":"in process"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := modeltest.NewHandler(sc)
	c := &http.Client{Transport: h.Transport()}
	_, err = c.Post("http://anywhere.invalid/v1/messages", "application/json", strings.NewReader(`{}`))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("status 0 in process: err = %v, want ECONNRESET", err)
	}
	res, err := c.Post("http://anywhere.invalid/v1/messages", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if b := readAll(t, res.Body); !bytes.Contains(b, []byte("in process")) {
		t.Errorf("body = %s", b)
	}
}

func TestStartListensOnLoopback(t *testing.T) {
	srv, err := modeltest.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" {
		t.Errorf("listening on %s", u.Host)
	}
}

func TestResponsesStream(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1/responses", `{"model":"gpt-x","stream":true}`)
	b := readAll(t, res.Body)
	golden(t, "responses_stream.golden", b)

	var names []string
	var args []string
	var done []string
	for i, ev := range events(t, b) {
		var d struct {
			Type     string
			Sequence int `json:"sequence_number"`
			Delta    string
			Item     json.RawMessage
		}
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
			t.Fatal(err)
		}
		if d.Type != ev.name || d.Sequence != i {
			t.Errorf("event %d %q carries type %q, sequence %d", i, ev.name, d.Type, d.Sequence)
		}
		if len(names) == 0 || names[len(names)-1] != ev.name {
			names = append(names, ev.name)
		}
		if d.Type == "response.function_call_arguments.delta" && len(args) < 3 {
			args = append(args, d.Delta)
		}
		if d.Type == "response.output_item.done" {
			done = append(done, string(d.Item))
		}
	}
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %q", names)
	}
	if strings.Join(args, "") != `{"path":"main.go","offset":10}` || len(args) < 2 {
		t.Errorf("argument deltas = %q", args)
	}
	if len(done) != 4 || !strings.Contains(done[0], `"encrypted_content":"modeltest-encrypted-1"`) || !strings.Contains(done[0], `"text":"Plan: read it."`) {
		t.Errorf("items done: %q", done)
	}
}

func TestResponsesJSON(t *testing.T) {
	srv := newServer(t, `{"rounds":[{"text":"cut","stop":"max_tokens"}]}`)
	res := post(t, srv, "/responses", `{"model":"gpt-x"}`)
	golden(t, "responses.golden.json", readAll(t, res.Body))
}

func TestGeminiStream(t *testing.T) {
	srv := newServer(t, full)
	res := post(t, srv, "/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{"contents":[]}`)
	b := readAll(t, res.Body)
	golden(t, "gemini_stream.golden", b)
	evs := events(t, b)
	last := evs[len(evs)-1].data
	if !strings.Contains(last, `"finishReason":"STOP"`) || !strings.Contains(evs[len(evs)-2].data, `"thoughtSignature":"modeltest-signature-1"`) {
		t.Errorf("the first call is not signed, or the stream does not finish: %s", b)
	}
}

func TestGeminiJSONAndErrors(t *testing.T) {
	srv := newServer(t, `{"rounds":[{"text":"hi"},{"error":{"status":429,"body":"quota","retry_after":"38s"}}]}`)
	res := post(t, srv, "/v1beta/models/gemini-x:generateContent", `{}`)
	golden(t, "gemini.golden.json", readAll(t, res.Body))
	res = post(t, srv, "/v1beta/models/gemini-x:streamGenerateContent", `{}`)
	b := string(readAll(t, res.Body))
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "" || !strings.Contains(b, `"retryDelay":"38s"`) || !strings.Contains(b, "RESOURCE_EXHAUSTED") {
		t.Errorf("429: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
}
