package anthropic_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// FuzzStream feeds the stream decoder whatever a server might send: it
// must not panic; what it assembles must be storable and agree with the
// deltas it emitted; and it completes only a stream that said
// message_stop. The seeds are the recorded streams in testdata/streams
// and, in testdata/fuzz, inputs the fuzzer has found worth keeping.
func FuzzStream(f *testing.F) {
	sc, err := modeltestScript()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(modeltest.NewHandler(sc).Reply("/v1/messages", `{"stream":true}`))
	files, err := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded streams: %v", err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, body string) {
		c := anthropic.New(anthropic.Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: modeltest.Replay(body)}, Retry: model.Retry{Attempts: 1}})
		var events []model.Event
		resp, err := model.Collect(c.Stream(t.Context(), hello()), func(ev model.Event) { events = append(events, ev) })
		if err != nil {
			return
		}
		if !strings.Contains(body, "message_stop") {
			t.Fatal("completed a stream that never said message_stop")
		}
		if _, err := resp.Message.Parts.MarshalJSON(); err != nil {
			t.Fatalf("assembled a message that cannot be stored: %v", err)
		}
		var text, thinking strings.Builder
		args := map[int]string{}
		for _, ev := range events {
			switch ev := ev.(type) {
			case model.TextDelta:
				text.WriteString(ev.Text)
			case model.ThinkingDelta:
				thinking.WriteString(ev.Text)
			case model.ToolCallDelta:
				args[ev.Index] += ev.Arguments
			}
		}
		var thought string
		for _, p := range resp.Message.Parts {
			if th, ok := p.(model.Thinking); ok {
				thought += th.Text
			}
		}
		if text.String() != resp.Message.Text() || thinking.String() != thought {
			t.Fatalf("deltas say %q / %q, the response %q / %q", text.String(), thinking.String(), resp.Message.Text(), thought)
		}
		calls := resp.Message.ToolCalls()
		if len(args) != len(calls) {
			t.Fatalf("deltas name %d calls, the response has %d", len(args), len(calls))
		}
		for i, c := range calls {
			if a := args[i]; a != "" && string(model.ToolArguments(a)) != string(c.Arguments) {
				t.Fatalf("call %d: deltas say %q, the response %s", i, a, c.Arguments)
			}
		}
	})
}

// FuzzWhole does the same for an unstreamed reply.
func FuzzWhole(f *testing.F) {
	sc, err := modeltestScript()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(modeltest.NewHandler(sc).Reply("/v1/messages", `{}`))
	f.Add(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	f.Add(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"n","input":null}],"stop_reason":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		c := anthropic.New(anthropic.Options{BaseURL: "http://fuzz.invalid", NoStream: true,
			HTTPClient: &http.Client{Transport: modeltest.Replay(body)}, Retry: model.Retry{Attempts: 1}})
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
