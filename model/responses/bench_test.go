package responses_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
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
	body := modeltest.Replay(modeltest.NewHandler(sc).Reply("/v1/responses", `{"model":"m","stream":true}`))
	c := responses.New(responses.Options{BaseURL: "http://bench.invalid", Model: "m", HTTPClient: &http.Client{Transport: body}})
	req := hello()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(c.Stream(b.Context(), req), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestTools is a one-word reply to a request carrying twenty
// tools, as an agent's first request does: the tools' schemas are most of
// what the request encodes (model/openai's BenchmarkRequestTools).
func BenchmarkRequestTools(b *testing.B) {
	body := modeltest.Replay(modeltest.NewHandler(parse(b, `{"rounds":[{"text":"ok"}]}`)).Reply("/v1/responses", `{"model":"m","stream":true}`))
	c := responses.New(responses.Options{BaseURL: "http://bench.invalid", Model: "m", HTTPClient: &http.Client{Transport: body}})
	req := hello()
	for i := range 20 {
		req.Tools = append(req.Tools, model.ToolSpec{Name: fmt.Sprintf("tool_%d", i), Description: "Reads a file of the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"The file, relative to the workspace root."},` +
				`"line":{"type":"integer","minimum":1,"description":"The first line to read."},"limit":{"type":"integer","minimum":1,"maximum":2000},` +
				`"mode":{"type":"string","enum":["text","hex"]}},"required":["path"],"additionalProperties":false}`)})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(c.Stream(b.Context(), req), nil); err != nil {
			b.Fatal(err)
		}
	}
}
