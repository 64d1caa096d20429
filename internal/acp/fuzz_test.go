package acp

import (
	"encoding/json"
	"testing"
)

// FuzzUnmarshalUpdate: any payload decodes or fails cleanly, and what
// decodes encodes back to JSON that decodes to the same tag.
func FuzzUnmarshalUpdate(f *testing.F) {
	f.Add([]byte(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`))
	f.Add([]byte(`{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","content":[{"type":"diff","path":"/a","newText":"x"}]}`))
	f.Add([]byte(`{"sessionUpdate":"plan_update","planId":"p"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := UnmarshalUpdate(b)
		if err != nil {
			return
		}
		out, err := MarshalUpdate(u)
		if err != nil {
			return // a raw variant's JSON is kept as it came
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON from %q: %q", b, out)
		}
		again, err := UnmarshalUpdate(out)
		if err != nil || again.updateTag() != u.updateTag() {
			t.Fatalf("re-decode %q: %v", out, err)
		}
	})
}
