package jsonrpc

import (
	"context"
	"encoding/json"
	"io"
	"testing"
)

// pair connects two Conns over io.Pipes and serves both until b ends.
func pair(b *testing.B, server Handler) (client *Conn) {
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	srv := NewConn(c2sR, s2cW, server, Options{})
	client = NewConn(s2cR, c2sW, funcs{}, Options{})
	done := make(chan struct{}, 2)
	go func() { _ = srv.Serve(context.Background()); done <- struct{}{} }()
	go func() { _ = client.Serve(context.Background()); done <- struct{}{} }()
	b.Cleanup(func() {
		c2sW.Close()
		s2cW.Close()
		<-done
		<-done
	})
	return client
}

type promptParams struct {
	SessionID string            `json:"sessionId"`
	Prompt    []json.RawMessage `json:"prompt"`
}

// BenchmarkRoundTrip measures one request and its response between two
// Conns over io.Pipe: encode, write, read, parse, dispatch, handle,
// respond, match, decode.
func BenchmarkRoundTrip(b *testing.B) {
	client := pair(b, echo)
	params := promptParams{SessionID: "sess_0123456789", Prompt: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hello, world"}`)}}
	var out promptParams
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Call(ctx, "session/prompt", params, &out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripParallel runs round trips from many goroutines on one
// connection, as concurrent sessions do.
func BenchmarkRoundTripParallel(b *testing.B) {
	client := pair(b, echo)
	params := promptParams{SessionID: "sess_0123456789"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var out promptParams
		for pb.Next() {
			if err := client.Call(context.Background(), "session/prompt", params, &out); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
