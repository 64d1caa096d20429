package acp

import (
	"bytes"
	"encoding/json"
	"io"
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

// FuzzIngress: the ingress reader passes every byte through unchanged,
// whatever it is fed and however reads split it.
func FuzzIngress(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`+"\n"), uint8(3))
	f.Add([]byte("\n\n{\"method\":\"session/prompt\"\n"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		a := newArrivals()
		in := &ingress{r: &chunked{b: b, n: int(chunk%16) + 1}, a: a}
		got, err := io.ReadAll(in)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("ingress changed the stream: %q -> %q (%v)", b, got, err)
		}
		if len(a.pending) > maxArrivals {
			t.Fatalf("%d arrivals kept", len(a.pending))
		}
	})
}

// chunked reads b n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}
