package anthropic_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
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
	modeltest.NewHandler(sc).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages",
		strings.NewReader(`{"stream":true}`)))
	f.Add(rec.Body.String())
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{}}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{\"a\":1}}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := anthropic.New(anthropic.Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)}, Retry: model.Retry{Attempts: 1}})
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
