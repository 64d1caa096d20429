package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestIDsEchoedVerbatim(t *testing.T) {
	p := newPeer(t, echo, Options{})
	for _, id := range []string{`1`, `0`, `-7`, `1.0`, `1e3`, `9007199254740993`, `"abc"`, `""`, `"a\"b\\u00e9"`, `"7"`} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"m"}`)
		w := p.recv()
		if string(w.ID) != id {
			t.Errorf("id %s echoed as %s", id, w.ID)
		}
		if string(w.Result) != `"m"` || w.Error != nil {
			t.Errorf("id %s: result %s error %v", id, w.Result, w.Error)
		}
	}
}

func TestResponseShape(t *testing.T) {
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "nil":
			return nil, nil
		case "empty":
			return struct{}{}, nil
		case "multiline":
			return json.RawMessage("{\n  \"a\": [1,\n 2]\n}"), nil
		case "unmarshalable":
			return func() {}, nil
		}
		return nil, errors.New("unreachable")
	}}
	p := newPeer(t, h, Options{})
	for _, tc := range []struct{ method, want string }{
		{"nil", `{"jsonrpc":"2.0","id":1,"result":null}` + "\n"},
		{"empty", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"},
		{"multiline", `{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}` + "\n"},
		{"unmarshalable", `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}` + "\n"},
	} {
		p.send(`{"jsonrpc":"2.0","id":1,"method":"` + tc.method + `"}`)
		if got := p.recv().raw; got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.method, got, tc.want)
		}
	}
}

func TestParamsPassed(t *testing.T) {
	got := make(chan *Request, 2)
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		got <- req
		return struct{}{}, nil
	}}
	p := newPeer(t, h, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x": [1, 2]}}`)
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"b","params":null}`)
	p.recv()
	if r := <-got; r.Method != "a" || string(r.Params) != `{"x": [1, 2]}` {
		t.Errorf("request a: %+v", r)
	}
	if r := <-got; r.Method != "b" || r.Params != nil {
		t.Errorf("request b: params %q, want nil", r.Params)
	}
}

func TestNotificationsInOrder(t *testing.T) {
	const n = 200
	var mu sync.Mutex
	var seen []string
	first := make(chan struct{})
	release := make(chan struct{})
	h := funcs{
		handle: echo.handle,
		notify: func(ctx context.Context, n *Notification) {
			var v struct{ N int }
			_ = json.Unmarshal(n.Params, &v)
			if v.N == 0 {
				close(first)
				<-release // a slow handler must not hold up the reader
			}
			mu.Lock()
			seen = append(seen, n.Method+fmt.Sprint(v.N))
			mu.Unlock()
		},
	}
	p := newPeer(t, h, Options{})
	for i := range n {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":{"n":%d}}`, i))
	}
	<-first
	// The reader still serves requests while the notification handler is stuck.
	p.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if w := p.recv(); string(w.Result) != `"ping"` {
		t.Fatalf("request behind a blocked notification: %s", w.raw)
	}
	close(release)
	if err := p.close(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if len(seen) != n {
		t.Fatalf("handled %d notifications, want %d", len(seen), n)
	}
	for i, s := range seen {
		if s != fmt.Sprintf("note%d", i) {
			t.Fatalf("notification %d is %s", i, s)
		}
	}
}

func TestConcurrentRequestsAnsweredIndependently(t *testing.T) {
	release := make(chan struct{})
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			<-release
		}
		return req.Method, nil
	}}
	p := newPeer(t, h, Options{})
	p.send(`{"jsonrpc":"2.0","id":"s","method":"slow"}`)
	for i := range 10 {
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"fast"}`, i))
	}
	got := map[string]bool{}
	for range 10 {
		w := p.recv()
		if string(w.Result) != `"fast"` {
			t.Fatalf("before the slow one: %s", w.raw)
		}
		got[string(w.ID)] = true
	}
	if len(got) != 10 {
		t.Fatalf("fast answers: %v", got)
	}
	close(release)
	if w := p.recv(); string(w.ID) != `"s"` || string(w.Result) != `"slow"` {
		t.Fatalf("slow answer: %s", w.raw)
	}
}

func TestHandlerErrors(t *testing.T) {
	var logs logBuffer
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "typed":
			return nil, NewError(InvalidParams, "Invalid params: cwd must be absolute", map[string]string{"cwd": "rel"})
		case "wrapped":
			return nil, fmt.Errorf("open session: %w", NewError(ResourceNotFound, "Resource not found", nil))
		case "plain":
			return nil, errors.New("open /secret/store.db: permission denied")
		case "panic":
			panic("boom in handler")
		}
		return nil, NewError(MethodNotFound, "Method not found", nil)
	}}
	p := newPeer(t, h, Options{Logger: logs.logger()})
	for _, tc := range []struct {
		method string
		want   string
	}{
		{"typed", `{"code":-32602,"message":"Invalid params: cwd must be absolute","data":{"cwd":"rel"}}`},
		{"wrapped", `{"code":-32002,"message":"Resource not found"}`},
		{"plain", `{"code":-32603,"message":"Internal error"}`},
		{"panic", `{"code":-32603,"message":"Internal error"}`},
		{"nope", `{"code":-32601,"message":"Method not found"}`},
	} {
		p.send(`{"jsonrpc":"2.0","id":3,"method":"` + tc.method + `"}`)
		w := p.recv()
		if w.Result != nil {
			t.Errorf("%s: result %s with an error", tc.method, w.Result)
		}
		if !strings.Contains(w.raw, `"error":`+tc.want+`}`) {
			t.Errorf("%s: got %s, want error %s", tc.method, w.raw, tc.want)
		}
		if strings.Contains(w.raw, "secret") || strings.Contains(w.raw, "boom") {
			t.Errorf("%s: internal detail sent: %s", tc.method, w.raw)
		}
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"permission denied", "boom in handler"} {
		if !strings.Contains(logs.String(), s) {
			t.Errorf("log lacks %q:\n%s", s, logs.String())
		}
	}
}

func TestEOFEndsServe(t *testing.T) {
	p := newPeer(t, echo, Options{})
	p.send(`{"jsonrpc":"2.0","id":1,"method":"a"}`)
	p.recv()
	if err := p.close(); err != nil {
		t.Fatalf("Serve after EOF: %v, want nil", err)
	}
	if err := p.conn.Serve(context.Background()); err == nil {
		t.Error("second Serve succeeded")
	}
	if err := p.conn.Notify(context.Background(), "x", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Notify after Serve: %v, want ErrClosed", err)
	}
	if err := p.conn.Call(context.Background(), "x", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Serve: %v, want ErrClosed", err)
	}
}

func TestLastLineWithoutNewline(t *testing.T) {
	p := newPeer(t, echo, Options{})
	if _, err := p.in.Write([]byte("\r\n  \n" + `{"jsonrpc":"2.0","id":1,"method":"crlf"}` + "\r\n")); err != nil {
		t.Fatal(err)
	}
	if w := p.recv(); string(w.Result) != `"crlf"` {
		t.Fatalf("CRLF line: %s", w.raw)
	}
	if _, err := p.in.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"last"}`)); err != nil {
		t.Fatal(err)
	}
	p.in.Close()
	if w := p.recv(); string(w.Result) != `"last"` {
		t.Fatalf("unterminated last line: %s", w.raw)
	}
}

// Member names are compared after JSON unescaping, values kept verbatim.
func TestEscapedMemberNames(t *testing.T) {
	p := newPeer(t, echo, Options{})
	p.send(`{"json\u0072pc":"2\u002e0","\u0069d":"q\u0031","method":"ec\u0068o","params":{"k":"\"}"}}`)
	w := p.recv()
	if string(w.ID) != `"q\u0031"` || string(w.Result) != `{"k":"\"}"}` {
		t.Fatalf("got %s", w.raw)
	}
}
