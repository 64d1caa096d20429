package openai_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
	"meka.dev/meka/model/script"
)

// bodyTransport answers every request with the same stream body.
type bodyTransport string

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(strings.NewReader(string(b))),
		Request:    r,
	}, nil
}

// FuzzStream feeds the stream decoder whatever a server might send: it
// must not panic, and what it assembles must be storable.
func FuzzStream(f *testing.F) {
	sc, err := modeltestScript()
	if err != nil {
		f.Fatal(err)
	}
	rec := httptest.NewRecorder()
	modeltest.NewHandler(sc).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions",
		strings.NewReader(`{"stream":true,"stream_options":{"include_usage":true}}`)))
	f.Add(rec.Body.String())
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"error\":{\"message\":\"x\",\"code\":\"oops\"}}\n\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := openai.New(openai.Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)}, Retry: model.Retry{Attempts: 1}})
		resp, err := model.Collect(c.Stream(t.Context(), hello()), nil)
		if err != nil {
			return
		}
		if _, err := resp.Message.Parts.MarshalJSON(); err != nil {
			t.Fatalf("assembled a message that cannot be stored: %v", err)
		}
	})
}

func modeltestScript() (*script.Script, error) {
	return script.Parse([]byte(`{"rounds":[{"thinking":"hmm","redacted_thinking":"r","text":"Reading.",
		"tool_calls":[{"id":"c1","name":"read","arguments":{"path":"a"}},{"id":"c2","name":"bad","raw_arguments":"{\"x\":"}],
		"usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":1}}]}`))
}
