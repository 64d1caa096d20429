package modeltest

import (
	"strings"
	"testing"

	"meka.dev/meka/model"
)

// CheckStream runs req on p and fails t unless what the adapter assembled
// is what its stream said: no error after a Completed event, a message
// that can be stored, and text, thinking and each call's arguments equal
// to what their deltas add up to. A stream that fails before completing
// passes: the adapter's fuzz tests use it on whatever a server might send.
func CheckStream(t testing.TB, p model.Provider, req *model.Request) {
	t.Helper()
	var text, thinking strings.Builder
	args := map[int]*strings.Builder{}
	completed := 0
	resp, err := model.Collect(p.Stream(t.Context(), req), func(ev model.Event) {
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
}
