package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type readResult struct {
	Content string `json:"content"`
}

func TestCallsMatchedByID(t *testing.T) {
	p := newPeer(t, echo, Options{})
	type outcome struct {
		res readResult
		err error
	}
	results := make([]chan outcome, 3)
	for i := range results {
		results[i] = make(chan outcome, 1)
		go func() {
			var r readResult
			err := p.conn.Call(t.Context(), "fs/read_text_file", map[string]int{"n": i}, &r)
			results[i] <- outcome{r, err}
		}()
	}
	byN := map[int]json.RawMessage{}
	for _, w := range p.recvN(3) {
		var params struct{ N int }
		if err := json.Unmarshal(w.Params, &params); err != nil || w.Method != "fs/read_text_file" {
			t.Fatalf("request %s", w.raw)
		}
		if w.ID[0] < '0' || w.ID[0] > '9' {
			t.Fatalf("outbound id %s is not a number", w.ID)
		}
		byN[params.N] = w.ID
	}
	if len(byN) != 3 || string(byN[0]) == string(byN[1]) {
		t.Fatalf("ids %v", byN)
	}
	// Answer in reverse order; meanwhile the peer sends a request of its own.
	p.send(`{"jsonrpc":"2.0","id":` + string(byN[2]) + `,"result":{"content":"two"}}`)
	p.send(`{"jsonrpc":"2.0","id":"peer-1","method":"ping"}`)
	if w := p.recv(); string(w.ID) != `"peer-1"` || string(w.Result) != `"ping"` {
		t.Fatalf("peer's request while calls pend: %s", w.raw)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(byN[1]) + `,"error":{"code":-32002,"message":"Resource not found","data":{"path":"/a"}}}`)
	p.send(`{"jsonrpc":"2.0","id":` + string(byN[0]) + `.0,"result":{"content":"zero"}}`)

	if o := <-results[2]; o.err != nil || o.res.Content != "two" {
		t.Errorf("call 2: %+v", o)
	}
	o := <-results[1]
	var rpcErr *Error
	if !errors.As(o.err, &rpcErr) || rpcErr.Code != ResourceNotFound || rpcErr.Message != "Resource not found" || string(rpcErr.Data) != `{"path":"/a"}` {
		t.Errorf("call 1: %v, want the peer's *Error", o.err)
	}
	if o := <-results[0]; o.err != nil || o.res.Content != "zero" {
		t.Errorf("call 0 (id echoed as a float): %+v", o)
	}
}

func TestCallMessageShapes(t *testing.T) {
	p := newPeer(t, echo, Options{})
	errs := make(chan error, 1)
	go func() { errs <- p.conn.Call(t.Context(), "session/update", nil, nil) }()
	w := p.recv()
	if want := `{"jsonrpc":"2.0","id":` + string(w.ID) + `,"method":"session/update"}` + "\n"; w.raw != want {
		t.Errorf("call without params: %q, want %q", w.raw, want)
	}
	p.send(`{"jsonrpc":"2.0","id":` + string(w.ID) + `,"result":{"ignored":true}}`)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	go func() {
		errs <- p.conn.Notify(t.Context(), "session/update", json.RawMessage("{\n\"sessionId\": \"s\"\n}"))
	}()
	if w := p.recv(); w.raw != `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}`+"\n" {
		t.Errorf("notification: %q", w.raw)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}

	if err := p.conn.Notify(t.Context(), "x", func() {}); err == nil || !strings.Contains(err.Error(), "marshal params") {
		t.Errorf("unmarshalable params: %v", err)
	}
}

func TestCallBadResponses(t *testing.T) {
	p := newPeer(t, echo, Options{})
	for _, tc := range []struct{ response, want string }{
		{`"result":"not an object"`, "decode result"},
		{`"error":"not an object"`, "decode error response"},
		{`"error":{"code":1.5,"message":"m"}`, "decode error response"},
	} {
		errs := make(chan error, 1)
		go func() {
			var r readResult
			errs <- p.conn.Call(t.Context(), "m", nil, &r)
		}()
		w := p.recv()
		p.send(`{"jsonrpc":"2.0","id":` + string(w.ID) + `,` + tc.response + `}`)
		err := <-errs
		var rpcErr *Error
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &rpcErr) {
			t.Errorf("%s: %v, want a local error about %q", tc.response, err, tc.want)
		}
	}
}

func TestCallBeforeServe(t *testing.T) {
	// Calls and notifications may go out before Serve starts reading.
	p := newPeerNoServe(t, echo, Options{})
	errs := make(chan error, 1)
	go func() { errs <- p.conn.Call(t.Context(), "m", nil, nil) }()
	w := p.recv()
	p.serve()
	p.send(`{"jsonrpc":"2.0","id":` + string(w.ID) + `,"result":null}`)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// flakyWriter fails its first write, then succeeds.
type flakyWriter struct{ n int }

func (w *flakyWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n == 1 {
		return 0, errors.New("peer gone")
	}
	return len(p), nil
}

// After a failed write the stream may hold half a message: every later
// write fails with the first error rather than send more after it.
func TestWriteErrorIsSticky(t *testing.T) {
	var logs logBuffer
	w := &flakyWriter{}
	conn := NewConn(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"m"}`+"\n"), w, echo, Options{Logger: logs.logger()})
	if err := conn.Notify(t.Context(), "a", nil); err == nil || !strings.Contains(err.Error(), "peer gone") {
		t.Fatalf("first Notify: %v", err)
	}
	if err := conn.Notify(t.Context(), "b", nil); err == nil || !strings.Contains(err.Error(), "peer gone") {
		t.Fatalf("second Notify: %v", err)
	}
	if err := conn.Call(t.Context(), "c", nil, nil); err == nil || !strings.Contains(err.Error(), "peer gone") {
		t.Fatalf("Call: %v", err)
	}
	// Requests are still read and served; their responses fail quietly.
	if err := conn.Serve(t.Context()); err != nil {
		t.Fatal(err)
	}
	if w.n != 1 {
		t.Errorf("%d writes reached the writer after it failed", w.n-1)
	}
	if !strings.Contains(logs.String(), "peer gone") {
		t.Errorf("write failure not logged:\n%s", logs.String())
	}
}
