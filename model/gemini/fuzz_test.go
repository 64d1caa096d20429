package gemini_test

import (
	"net/http"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
)

const fuzzScript = `{"rounds":[{"thinking":"hmm","text":"Reading.",
	"tool_calls":[{"id":"c1","name":"read","arguments":{"path":"a"}},{"id":"c2","name":"bad","raw_arguments":"{\"x\":"}],
	"usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":1}}]}`

// FuzzStream feeds the stream decoder whatever a server might send: it
// must not panic, what it assembles must be storable, and the response
// must be what its deltas add up to. The seed corpus in
// testdata/fuzz/FuzzStream holds recorded streams.
func FuzzStream(f *testing.F) {
	f.Add(modeltest.NewHandler(parse(f, fuzzScript)).Reply("/v1beta/models/m:streamGenerateContent", `{}`))
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"n\"},\"thoughtSignature\":\"x\"},{\"text\":\"\",\"thoughtSignature\":\"y\"}]},\"finishReason\":\"STOP\"}]}\n\n")
	f.Add("data: {\"error\":{\"code\":429,\"message\":\"q\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"3s\"}]}}\n\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		c := gemini.New(gemini.Options{BaseURL: "http://fuzz.invalid", Model: "m", HTTPClient: &http.Client{Transport: modeltest.Replay(body)}, Retry: model.Retry{Attempts: 1}})
		modeltest.CheckStream(t, c, hello())
	})
}
