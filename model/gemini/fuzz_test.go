package gemini_test

import (
	"net/http"
	"strings"
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
		var text, thinking strings.Builder
		args := map[int]*strings.Builder{}
		completed := 0
		resp, err := model.Collect(c.Stream(t.Context(), hello()), func(ev model.Event) {
			switch ev := ev.(type) {
			case model.TextDelta:
				text.WriteString(ev.Text)
			case model.ThinkingDelta:
				thinking.WriteString(ev.Text)
			case model.ToolCallDelta:
				if args[ev.Index] == nil {
					args[ev.Index] = &strings.Builder{}
				}
				args[ev.Index].WriteString(ev.Arguments)
			case model.Completed:
				completed++
			}
		})
		if err != nil {
			if completed != 0 {
				t.Fatalf("failed with %v after a Completed event", err)
			}
			return
		}
		if _, err := resp.Message.Parts.MarshalJSON(); err != nil {
			t.Fatalf("assembled a message that cannot be stored: %v", err)
		}
		if resp.Message.Text() != text.String() {
			t.Fatalf("text %q, deltas add up to %q", resp.Message.Text(), text.String())
		}
		var th strings.Builder
		for _, p := range resp.Message.Parts {
			if p, ok := p.(model.Thinking); ok {
				th.WriteString(p.Text)
			}
		}
		if th.String() != thinking.String() {
			t.Fatalf("thinking %q, deltas add up to %q", th.String(), thinking.String())
		}
		for i, call := range resp.Message.ToolCalls() {
			var sent string
			if args[i] != nil {
				sent = args[i].String()
			}
			if want := model.ToolArguments(sent); string(call.Arguments) != string(want) {
				t.Fatalf("call %d arguments %s, deltas add up to %s", i, call.Arguments, want)
			}
		}
	})
}
