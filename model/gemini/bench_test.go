package gemini_test

import (
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
)

// BenchmarkStream is one streamed reply of reasoning, text and two tool
// calls, request encoding included, with no network in between: the same
// reply as model/openai's and model/anthropic's BenchmarkStream.
func BenchmarkStream(b *testing.B) {
	words := strings.Repeat("streamed words ", 140)
	sc := parse(b, `{"rounds":[{"thinking":"`+words+`","text":"`+words+`","tool_calls":[
		{"id":"c1","name":"read","arguments":{"path":"a/b/c.go","limit":200}},
		{"id":"c2","name":"edit","arguments":{"path":"a/b/c.go","old":"`+words[:400]+`","new":"x"}}],
		"usage":{"input_tokens":100,"output_tokens":900,"cache_read_tokens":4000}}]}`)
	body := modeltest.Replay(modeltest.NewHandler(sc).Reply("/v1beta/models/m:streamGenerateContent", `{}`))
	c := gemini.New(gemini.Options{BaseURL: "http://bench.invalid", Model: "m", HTTPClient: &http.Client{Transport: body}})
	req := hello()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(c.Stream(b.Context(), req), nil); err != nil {
			b.Fatal(err)
		}
	}
}
