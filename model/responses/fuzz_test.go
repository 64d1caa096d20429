package responses_test

import (
	"net/http"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
)

const fuzzScript = `{"rounds":[{"thinking":"hmm","text":"Reading.",
	"tool_calls":[{"id":"c1","name":"read","arguments":{"path":"a"}},{"id":"c2","name":"bad","raw_arguments":"{\"x\":"}],
	"usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":1}}]}`

// FuzzStream feeds the stream decoder whatever a server might send: it
// must not panic, what it assembles must be storable, and the response
// must be what its deltas add up to. The seed corpus in
// testdata/fuzz/FuzzStream holds recorded streams.
func FuzzStream(f *testing.F) {
	f.Add(modeltest.NewHandler(parse(f, fuzzScript)).Reply("/v1/responses", `{"stream":true}`))
	f.Add("data: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"n\",\"arguments\":\"{}\"}}\n\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n")
	f.Add("data: {\"type\":\"error\",\"code\":\"x\",\"message\":\"y\"}\n\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := responses.New(responses.Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: modeltest.Replay(body)}, Retry: model.Retry{Attempts: 1}})
		modeltest.CheckStream(t, c, hello())
	})
}
