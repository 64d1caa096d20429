package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
)

// funcs is a Handler made of func fields; nil fields answer MethodNotFound
// and ignore notifications.
type funcs struct {
	handle func(ctx context.Context, req *Request) (any, error)
	notify func(ctx context.Context, n *Notification)
}

func (f funcs) Handle(ctx context.Context, req *Request) (any, error) {
	if f.handle == nil {
		return nil, NewError(MethodNotFound, "Method not found", map[string]string{"method": req.Method})
	}
	return f.handle(ctx, req)
}

func (f funcs) HandleNotification(ctx context.Context, n *Notification) {
	if f.notify != nil {
		f.notify(ctx, n)
	}
}

// wire is one outbound message as the test reads it.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *Error          `json:"error"`
	raw     string
}

// peer drives a Conn over two io.Pipes, as the other end would: it writes
// lines to the conn and reads the conn's lines.
type peer struct {
	t    testing.TB
	conn *Conn
	in   *io.PipeWriter
	out  *bufio.Reader
	outW *io.PipeWriter
	once sync.Once
	done chan struct{} // closed when Serve returned
	err  error         // Serve's result, once done is closed
}

func newPeer(t testing.TB, h Handler, opts Options) *peer {
	p := newPeerNoServe(t, h, opts)
	p.serve()
	return p
}

// newPeerNoServe is newPeer without starting Serve: the test calls serve.
func newPeerNoServe(t testing.TB, h Handler, opts Options) *peer {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &peer{t: t, in: inW, out: bufio.NewReader(outR), outW: outW, done: make(chan struct{})}
	p.conn = NewConn(inR, outW, h, opts)
	t.Cleanup(func() {
		inW.Close()
		outR.Close() // unblocks any write still pending
		p.serve()    // in case the test never did
		<-p.done
	})
	return p
}

// serve starts Serve, once. It runs under its own context: t.Context ends
// before cleanups run, and tests end Serve with EOF to see its result.
func (p *peer) serve() {
	p.once.Do(func() {
		go func() {
			defer close(p.done)
			p.err = p.conn.Serve(context.Background())
		}()
	})
}

// send writes one line to the conn. The conn's reader never waits on
// handlers, so this returns once the line is read.
func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// recv reads the conn's next line.
func (p *peer) recv() wire {
	p.t.Helper()
	line, err := p.out.ReadString('\n')
	if err != nil {
		p.t.Fatalf("recv: %v (partial %q)", err, line)
	}
	var w wire
	if err := json.Unmarshal([]byte(line), &w); err != nil {
		p.t.Fatalf("recv: invalid JSON %q: %v", line, err)
	}
	if w.JSONRPC != "2.0" {
		p.t.Fatalf("recv: jsonrpc %q in %q", w.JSONRPC, line)
	}
	w.raw = line
	return w
}

// recvN reads n lines.
func (p *peer) recvN(n int) []wire {
	p.t.Helper()
	ws := make([]wire, n)
	for i := range ws {
		ws[i] = p.recv()
	}
	return ws
}

// close ends the conn's input and returns Serve's result.
func (p *peer) close() error {
	p.in.Close()
	// Drain the output so responses written during shutdown never block.
	go io.Copy(io.Discard, p.out)
	<-p.done
	return p.err
}

// logBuffer is a concurrency-safe slog sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// echo answers every request with its params (or its method when none).
var echo = funcs{handle: func(ctx context.Context, req *Request) (any, error) {
	if req.Params == nil {
		return req.Method, nil
	}
	return req.Params, nil
}}

// drain ends the conn's input and returns every line the conn writes until
// Serve has returned, checking Serve's result is nil.
func (p *peer) drain() []wire {
	p.t.Helper()
	p.in.Close()
	var ws []wire
	lines := make(chan wire)
	go func() {
		defer close(lines)
		for {
			line, err := p.out.ReadString('\n')
			if err != nil {
				return
			}
			var w wire
			_ = json.Unmarshal([]byte(line), &w)
			w.raw = line
			lines <- w
		}
	}()
	for {
		select {
		case w := <-lines:
			ws = append(ws, w)
			continue
		case <-p.done:
		}
		break
	}
	if p.err != nil {
		p.t.Errorf("Serve: %v", p.err)
	}
	// Serve has returned, so every write is done: close the output to
	// collect what is still buffered in the pipe.
	p.outW.Close()
	for w := range lines {
		ws = append(ws, w)
	}
	return ws
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
