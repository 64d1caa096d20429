package jsonrpc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// Every bad line is answered, with the id when one can be read, and the
// conn keeps serving.
func TestMalformedLinesAnswered(t *testing.T) {
	p := newPeer(t, echo, Options{})
	for _, tc := range []struct {
		line   string
		code   int
		wantID string
	}{
		{`{bad`, ParseError, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"m"`, ParseError, `null`},
		{`{"jsonrpc":"2.0","id":1,"method":"m"}}`, ParseError, `null`},
		{"\x00\xff", ParseError, `null`},
		{`[]`, InvalidRequest, `null`},
		{`[{"jsonrpc":"2.0","id":1,"method":"m"}]`, InvalidRequest, `null`},
		{`"hello"`, InvalidRequest, `null`},
		{`42`, InvalidRequest, `null`},
		{`null`, InvalidRequest, `null`},
		{`true`, InvalidRequest, `null`},
		{`{}`, InvalidRequest, `null`},
		{`{"id":1,"method":"m"}`, InvalidRequest, `1`},
		{`{"jsonrpc":"1.0","id":2,"method":"m"}`, InvalidRequest, `2`},
		{`{"jsonrpc":2.0,"id":"v","method":"m"}`, InvalidRequest, `"v"`},
		{`{"jsonrpc":"2.0","id":3}`, InvalidRequest, `3`},
		{`{"jsonrpc":"2.0","id":"x","params":{}}`, InvalidRequest, `"x"`},
		{`{"jsonrpc":"2.0","id":null,"method":"m"}`, InvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":true,"method":"m"}`, InvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, InvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":[1],"method":"m"}`, InvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":4,"method":5}`, InvalidRequest, `4`},
		{`{"jsonrpc":"2.0","id":4,"method":null}`, InvalidRequest, `4`},
		{`{"jsonrpc":"2.0","method":["m"]}`, InvalidRequest, `null`},
		{`{"jsonrpc":"2.0","id":5,"method":"m","params":"str"}`, InvalidRequest, `5`},
		{`{"jsonrpc":"2.0","method":"m","params":7}`, InvalidRequest, `null`},
		{`{"JSONRPC":"2.0","ID":6,"METHOD":"m"}`, InvalidRequest, `null`},
	} {
		p.send(tc.line)
		p.send(`{"jsonrpc":"2.0","id":"ok","method":"m"}`)
		// The error reply and the next response may come in either order.
		var gotErr, gotOK bool
		for _, w := range p.recvN(2) {
			if string(w.ID) == `"ok"` && string(w.Result) == `"m"` {
				gotOK = true
				continue
			}
			if w.Error == nil || w.Error.Code != tc.code || string(w.ID) != tc.wantID || w.Result != nil {
				t.Errorf("%s: got %s, want code %d id %s", tc.line, w.raw, tc.code, tc.wantID)
			}
			gotErr = true
		}
		if !gotErr || !gotOK {
			t.Errorf("%s: error answered %v, next request served %v", tc.line, gotErr, gotOK)
		}
	}
}

// Responses are never answered, even malformed ones or unknown ids.
func TestResponsesNeverAnswered(t *testing.T) {
	var logs logBuffer
	p := newPeer(t, echo, Options{Logger: logs.logger()})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":99,"result":1}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"id":"s","error":"not an object"}`,
		`{"jsonrpc":"2.0","id":[1],"result":null}`,
	} {
		p.send(line)
	}
	if ws := p.drain(); len(ws) != 0 {
		t.Fatalf("answered a response: %s", ws[0].raw)
	}
	if n := strings.Count(logs.String(), "ignored"); n != 5 {
		t.Errorf("%d of 5 responses logged as ignored:\n%s", n, logs.String())
	}
}

func TestDuplicateInflightID(t *testing.T) {
	release := make(chan struct{})
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "slow" {
			<-release
		}
		return req.Method, nil
	}}
	p := newPeer(t, h, Options{})
	p.send(`{"jsonrpc":"2.0","id":7,"method":"slow"}`)
	p.send(`{"jsonrpc":"2.0","id":7.0,"method":"again"}`)
	if w := p.recv(); w.Error == nil || w.Error.Code != InvalidRequest || string(w.ID) != `7.0` {
		t.Fatalf("duplicate id: %s", w.raw)
	}
	close(release)
	if w := p.recv(); string(w.Result) != `"slow"` {
		t.Fatalf("first request: %s", w.raw)
	}
	// Once answered, the id may be used again.
	p.send(`{"jsonrpc":"2.0","id":7,"method":"reuse"}`)
	if w := p.recv(); string(w.Result) != `"reuse"` {
		t.Fatalf("reused id: %s", w.raw)
	}
}

// bigRequest returns a request line of exactly n bytes (n ≥ 60) whose
// params hold one long string, with the id before the params.
func bigRequest(id string, n int) string {
	head := `{"jsonrpc":"2.0","id":` + id + `,"method":"big","params":{"s":"`
	tail := `"}}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

func TestLineLimitBoundary(t *testing.T) {
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) { return len(req.Params), nil }}
	p := newPeer(t, h, Options{MaxLineBytes: 100})
	p.send(bigRequest("1", 100))
	if w := p.recv(); w.Error != nil || string(w.ID) != "1" {
		t.Fatalf("line of exactly the limit: %s", w.raw)
	}
	p.send(bigRequest("2", 101))
	w := p.recv()
	if w.Error == nil || w.Error.Code != InvalidRequest || string(w.ID) != "2" || string(w.Error.Data) != `{"maxLineBytes":100}` {
		t.Fatalf("line one byte over: %s", w.raw)
	}
}

func TestOversizeLine(t *testing.T) {
	p := newPeer(t, echo, Options{MaxLineBytes: 1 << 20})
	for _, tc := range []struct{ line, wantID string }{
		{bigRequest(`"big-1"`, 5<<20), `"big-1"`},
		// The id comes after the payload: not recoverable, so null.
		{`{"jsonrpc":"2.0","params":{"s":"` + strings.Repeat("y", 5<<20) + `"},"id":2,"method":"m"}`, `null`},
		// Not even JSON.
		{strings.Repeat("z", 5<<20), `null`},
	} {
		p.send(tc.line)
		w := p.recv()
		if w.Error == nil || w.Error.Code != InvalidRequest || string(w.ID) != tc.wantID {
			t.Errorf("oversize line: %s, want InvalidRequest with id %s", w.raw, tc.wantID)
		}
		p.send(`{"jsonrpc":"2.0","id":"next","method":"m"}`)
		if w := p.recv(); string(w.ID) != `"next"` || string(w.Result) != `"m"` {
			t.Fatalf("after the oversize line: %s", w.raw)
		}
	}
}

// A line past the old 10 MiB SDK limit is fine under the default limit.
func TestDefaultLimitAcceptsLargeLines(t *testing.T) {
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) { return len(req.Params), nil }}
	p := newPeer(t, h, Options{})
	p.send(bigRequest("1", 12<<20))
	if w := p.recv(); w.Error != nil {
		t.Fatalf("12 MiB line: %s", w.raw)
	}
}

// repeatReader yields n bytes copied from block, never allocating them.
type repeatReader struct {
	block []byte
	n     int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), int64(len(r.block)), r.n)]
	copy(p, r.block)
	r.n -= int64(len(p))
	return len(p), nil
}

// A 100 MiB line is streamed past: answered, the next line served, and
// never held in memory.
func TestHundredMiBLine(t *testing.T) {
	const size = 100 << 20
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"`),
		&repeatReader{block: bytes.Repeat([]byte{'x'}, 64<<10), n: size},
		strings.NewReader(`"}]}}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"m"}`+"\n"),
	)
	var out bytes.Buffer
	conn := NewConn(in, &out, echo, Options{MaxLineBytes: 1 << 20})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := conn.Serve(t.Context()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB for a 100 MiB line", alloc>>20)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), out.String())
	}
	want := map[string]bool{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: message too large","data":{"maxLineBytes":1048576}}}`: true,
		`{"jsonrpc":"2.0","id":2,"result":"m"}`: true,
	}
	for _, l := range lines {
		if !want[l] {
			t.Errorf("unexpected line %s", l)
		}
		delete(want, l)
	}
	if len(want) != 0 {
		t.Errorf("missing %v", want)
	}
}

// An oversize response fails its Call instead of leaving it hanging, and
// is not answered.
func TestOversizeResponseFailsCall(t *testing.T) {
	p := newPeer(t, echo, Options{MaxLineBytes: 1 << 10})
	returned := make(chan error)
	go func() { returned <- p.conn.Call(t.Context(), "fs/read_text_file", nil, nil) }()
	req := p.recv()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":"%s"}}`, req.ID, strings.Repeat("c", 4<<10)))
	if err := <-returned; !errorsIs(err, ErrTooLarge) {
		t.Fatalf("Call: %v, want ErrTooLarge", err)
	}
	if ws := p.drain(); len(ws) != 0 {
		t.Fatalf("answered an oversize response: %s", ws[0].raw)
	}
}

// A message's params stay intact while later lines reuse the read buffer,
// also after an oversize line grew that buffer.
func TestMessageOutlivesReadBuffer(t *testing.T) {
	bDone := make(chan struct{})
	got := make(chan string, 1)
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		switch req.Method {
		case "a":
			<-bDone
			got <- string(req.Params)
		case "b":
			close(bDone)
		}
		return nil, nil
	}}
	p := newPeer(t, h, Options{MaxLineBytes: 8 << 20})
	p.send(bigRequest("0", 10<<20))
	p.recv()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"a","params":{"s":"AAAAAAAA"}}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"b","params":{"s":"BBBBBBBB"}}`)
	if s := <-got; s != `{"s":"AAAAAAAA"}` {
		t.Fatalf("params of a: %s", s)
	}
}
