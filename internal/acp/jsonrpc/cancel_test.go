package jsonrpc

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestInboundCancelRequest(t *testing.T) {
	started := make(chan string, 4)
	causes := make(chan error, 4)
	var notes []string
	h := funcs{
		handle: func(ctx context.Context, req *Request) (any, error) {
			started <- string(req.ID)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			if req.Method == "stubborn" {
				return "done anyway", nil
			}
			return nil, ctx.Err()
		},
		notify: func(ctx context.Context, n *Notification) { notes = append(notes, n.Method) },
	}
	p := newPeer(t, h, Options{})
	for _, tc := range []struct{ id, cancelID, method, want string }{
		{`"r1"`, `"r1"`, "wait", `{"code":-32800,"message":"Request cancelled"}`},
		{`5`, `5.0`, "wait", `{"code":-32800,"message":"Request cancelled"}`},
		{`6`, `6`, "stubborn", `"done anyway"`},
	} {
		p.send(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"` + tc.method + `"}`)
		if id := <-started; id != tc.id {
			t.Fatalf("started %s, want %s", id, tc.id)
		}
		// Cancels for other ids, or malformed, touch nothing.
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"5"}}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":999}}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request"}`)
		p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + tc.cancelID + `}}`)
		w := p.recv()
		if string(w.ID) != tc.id || !strings.Contains(w.raw, tc.want) {
			t.Errorf("answer to %s: %s, want %s", tc.id, w.raw, tc.want)
		}
		if err := <-causes; !errors.Is(err, ErrCancelRequested) {
			t.Errorf("cause %v, want ErrCancelRequested", err)
		}
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("$/cancel_request reached the handler: %v", notes)
	}
}

func TestOutboundCancelRequest(t *testing.T) {
	var logs logBuffer
	p := newPeer(t, echo, Options{Logger: logs.logger()})
	ctx, cancel := context.WithCancel(t.Context())
	returned := make(chan error)
	go func() { returned <- p.conn.Call(ctx, "session/request_permission", map[string]string{"q": "?"}, nil) }()
	req := p.recv()
	if req.Method != "session/request_permission" || req.ID[0] < '0' || req.ID[0] > '9' {
		t.Fatalf("request %s: want a numeric id", req.raw)
	}
	cancel()
	w := p.recv()
	if w.Method != "$/cancel_request" || string(w.Params) != `{"requestId":`+string(req.ID)+`}` || w.ID != nil {
		t.Fatalf("after cancel: %s", w.raw)
	}
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call: %v, want context.Canceled", err)
	}
	// The late answer matches nothing: logged, ignored, serving goes on.
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"outcome":"cancelled"}}`)
	p.send(`{"jsonrpc":"2.0","id":"next","method":"m"}`)
	if w := p.recv(); string(w.ID) != `"next"` {
		t.Fatalf("after a late response: %s", w.raw)
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "response to no pending call") {
		t.Errorf("late response not logged:\n%s", logs.String())
	}
}

func TestCallWithCanceledContextSendsNothing(t *testing.T) {
	p := newPeer(t, echo, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.conn.Call(ctx, "x", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call: %v", err)
	}
	if err := p.conn.Notify(ctx, "x", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Notify: %v", err)
	}
	if ws := p.drain(); len(ws) != 0 {
		t.Fatalf("wrote %q", ws[0].raw)
	}
}

// Serve's end fails pending Calls, cancels handlers and waits for them.
func TestServeEndFailsPendingCalls(t *testing.T) {
	for _, how := range []string{"eof", "ctx"} {
		t.Run(how, func(t *testing.T) {
			handlerCtx := make(chan context.Context, 1)
			h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
				handlerCtx <- ctx
				// A handler blocked on a Call of its own.
				return nil, connOf(ctx).Call(ctx, "fs/read_text_file", nil, nil)
			}}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			t.Cleanup(func() { inW.Close(); outR.Close() })
			conn := NewConn(inR, outW, h, Options{})
			ctx, cancel := context.WithCancel(context.WithValue(t.Context(), connKey{}, conn))
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- conn.Serve(ctx) }()
			out := bufio.NewReader(outR)

			callErr := make(chan error, 1)
			go func() { callErr <- conn.Call(t.Context(), "session/request_permission", nil, nil) }()
			readLine(t, out) // the Call's request
			if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"prompt"}`+"\n"); err != nil {
				t.Fatal(err)
			}
			hctx := <-handlerCtx
			readLine(t, out) // the handler's own Call
			go io.Copy(io.Discard, out)

			if how == "eof" {
				inW.Close()
			} else {
				cancel()
			}
			err := <-served
			if how == "eof" && err != nil || how == "ctx" && !errors.Is(err, context.Canceled) {
				t.Errorf("Serve: %v", err)
			}
			if err := <-callErr; !errors.Is(err, ErrClosed) {
				t.Errorf("pending Call: %v, want ErrClosed", err)
			}
			if hctx.Err() == nil {
				t.Error("handler context not canceled")
			}
			if err := conn.Call(t.Context(), "x", nil, nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Call after Serve: %v", err)
			}
		})
	}
}

type connKey struct{}

func connOf(ctx context.Context) *Conn { return ctx.Value(connKey{}).(*Conn) }

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return line
}

// With an r that has read deadlines, ctx's end interrupts the blocked Read
// and Serve leaves r unread.
func TestServeCtxInterruptsRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	conn := NewConn(r, io.Discard, echo, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- conn.Serve(ctx) }()
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve: %v", err)
	}
	// The reading goroutine is gone: what is written now stays for us.
	if _, err := io.WriteString(w, "after\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "after\n" {
		t.Fatalf("read after Serve: %q, %v", line, err)
	}
}

// A notification handler's ctx ends with Serve.
func TestNotificationContextEndsWithServe(t *testing.T) {
	got := make(chan context.Context, 1)
	h := funcs{notify: func(ctx context.Context, n *Notification) { got <- ctx }}
	p := newPeer(t, h, Options{})
	p.send(`{"jsonrpc":"2.0","method":"n","params":[1]}`)
	ctx := <-got
	if ctx.Err() != nil {
		t.Fatal("notification ctx canceled early")
	}
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil {
		t.Fatal("notification ctx alive after Serve")
	}
}
