package openai_test

import (
	"net/http"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
	"meka.dev/meka/model/script"
)

// FuzzStream feeds the stream decoder whatever a server might send: it
// must not panic, what it assembles must be storable, and the response
// must be what its deltas add up to. The seed corpus in
// testdata/fuzz/FuzzStream holds the recorded streams of testdata/streams.
func FuzzStream(f *testing.F) {
	sc, err := modeltestScript()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(modeltest.NewHandler(sc).Reply("/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"error\":{\"message\":\"x\",\"code\":\"oops\"}}\n\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := openai.New(openai.Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: modeltest.Replay(body)}, Retry: model.Retry{Attempts: 1}})
		modeltest.CheckStream(t, c, hello())
	})
}

func modeltestScript() (*script.Script, error) {
	return script.Parse([]byte(`{"rounds":[{"thinking":"hmm","redacted_thinking":"r","text":"Reading.",
		"tool_calls":[{"id":"c1","name":"read","arguments":{"path":"a"}},{"id":"c2","name":"bad","raw_arguments":"{\"x\":"}],
		"usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":1}}]}`))
}
