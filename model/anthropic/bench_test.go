package anthropic_test

import (
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// BenchmarkStream decodes a reply of thinking, 2 KB of text and two tool
// calls, each streamed in many deltas, from memory: the adapter's own
// cost per reply, request encoding included.
func BenchmarkStream(b *testing.B) {
	words := strings.Repeat("streamed words ", 140)
	sc, err := script.Parse([]byte(`{"rounds":[{"thinking":"` + words + `","text":"` + words + `","tool_calls":[
		{"id":"c1","name":"read","arguments":{"path":"a/b/c.go","limit":200}},
		{"id":"c2","name":"edit","arguments":{"path":"a/b/c.go","old":"` + words[:400] + `","new":"x"}}]}]}`))
	if err != nil {
		b.Fatal(err)
	}
	body := modeltest.Replay(modeltest.NewHandler(sc).Reply("/v1/messages", `{"stream":true}`))
	c := anthropic.New(anthropic.Options{BaseURL: "http://bench.invalid", HTTPClient: &http.Client{Transport: body}})
	req := conversation(true)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(c.Stream(b.Context(), req), nil); err != nil {
			b.Fatal(err)
		}
	}
}
