package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler serves what the peer sends.
type Handler interface {
	// Handle serves one inbound request, each on its own goroutine, with a
	// ctx canceled by an inbound $/cancel_request for its id (cause
	// ErrCancelRequested) or by the end of Serve (cause ErrClosed); ctx also
	// identifies the request's messages (see AfterResponse). result is
	// marshalled as the response's result; nil is sent as null (return
	// struct{}{} for {}). An error of type *Error is sent as is; a context
	// error after ctx was canceled is sent as RequestCancelled; any other
	// error is sent as InternalError with a generic message, its text only
	// logged. A panic is recovered and answered like an error.
	Handle(ctx context.Context, req *Request) (result any, err error)
	// HandleNotification handles an inbound notification. Notifications are
	// handled in the order they arrive, one at a time, on a dedicated
	// goroutine that does not block the reader; unknown ones are for the
	// handler to ignore. $/cancel_request is served by the Conn itself.
	HandleNotification(ctx context.Context, n *Notification)
}

// Options configure a Conn; the zero value means defaults.
type Options struct {
	// MaxLineBytes bounds one inbound line (without its '\n'); zero means
	// DefaultMaxLineBytes. A longer line is streamed past, never held whole,
	// and answered with an InvalidRequest error.
	MaxLineBytes int
	// Logger receives what cannot be sent: handler errors, unmatched
	// responses, write failures. Nil discards.
	Logger *slog.Logger
	// Arrived, when set, sees each inbound request on the reader goroutine,
	// before it is dispatched and before any later line is read: whatever
	// it records is there for every message that follows on the wire (a
	// cancel notification racing its prompt's handler). It must not block
	// and must not keep req.
	Arrived func(req *Request)
	// NotificationArrived is Arrived for notifications ($/cancel_request
	// aside): it sees each on the reader goroutine, so what it records is
	// ordered against the requests around it on the wire (a prompt sent
	// right after a cancel is not the one cancelled). Same rules.
	NotificationArrived func(n *Notification)
}

// Conn is one JSON-RPC connection: it reads messages from r and writes
// them to w, one per line. Call and Notify may be used from any goroutine,
// before and during Serve.
type Conn struct {
	r       io.Reader
	w       io.Writer
	h       Handler
	max     int
	arrived func(*Request)
	noted   func(*Notification)
	log     *slog.Logger

	nextID atomic.Int64

	// wsem is the write token: its holder alone writes to w and reads or
	// changes werr, floor and floorFree.
	wsem      chan struct{}
	werr      error         // the first write error; later writes fail with it
	floor     *inbound      // the request whose AfterResponse hooks are running
	floorFree chan struct{} // closed when floor is released

	mu       sync.Mutex // guards the fields below
	served   bool
	stopped  bool // reading ended: nothing more is dispatched, no Call can complete
	closed   bool // Serve returned
	base     context.Context
	pending  map[string]*call    // outbound calls by idKey
	inflight map[string]*inbound // inbound requests by idKey

	// handlers counts request goroutines and reader replies; Add only under
	// mu while !stopped, so Serve's Wait sees every one.
	handlers sync.WaitGroup

	notes notifications
}

// NewConn returns a connection reading r and writing w, serving inbound
// messages with h once Serve runs. It starts nothing.
func NewConn(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	c := &Conn{
		r:        r,
		w:        w,
		h:        h,
		max:      opts.MaxLineBytes,
		arrived:  opts.Arrived,
		noted:    opts.NotificationArrived,
		log:      opts.Logger,
		wsem:     make(chan struct{}, 1),
		pending:  make(map[string]*call),
		inflight: make(map[string]*inbound),
	}
	if c.max <= 0 {
		c.max = DefaultMaxLineBytes
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.notes.wake = make(chan struct{}, 1)
	return c
}

// Serve reads and serves messages until EOF or ctx's end, then fails
// pending Calls with ErrClosed, cancels in-flight requests and waits for
// their handlers (and their responses) and for the notifications already
// read. It returns nil on EOF, ctx's error when ctx ended, else the read
// error.
//
// A Read blocked when ctx ends is interrupted with a read deadline if r has
// SetReadDeadline (a net.Conn, or an *os.File from os.Pipe); otherwise the
// reading goroutine is left to end at that Read's return, dispatching
// nothing more. Serve may be called once.
func (c *Conn) Serve(ctx context.Context) error {
	c.mu.Lock()
	if c.served {
		c.mu.Unlock()
		return errors.New("jsonrpc: Serve called twice")
	}
	c.served = true
	base, cancel := context.WithCancelCause(ctx)
	c.base = base
	c.mu.Unlock()
	defer cancel(nil)

	notesDone := make(chan struct{})
	go func() {
		defer close(notesDone)
		c.notifyLoop(context.WithValue(base, notificationKey{}, true))
	}()
	readDone := make(chan error, 1)
	go func() { readDone <- c.readLoop() }()

	var err error
	select {
	case err = <-readDone:
	case <-ctx.Done():
		err = ctx.Err()
		if d, ok := c.r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(time.Unix(1, 0)) == nil {
			<-readDone
			_ = d.SetReadDeadline(time.Time{})
		}
	}
	c.stop()
	cancel(ErrClosed)
	c.handlers.Wait()
	c.notes.close()
	<-notesDone
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return err
}

// stop ends dispatching and fails the pending calls: no response can come.
func (c *Conn) stop() {
	c.mu.Lock()
	c.stopped = true
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, pc := range pending {
		pc.done <- reply{err: ErrClosed}
	}
}

func (c *Conn) readLoop() error {
	lr := newLineReader(c.r, c.max)
	for {
		line, owned, err := lr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			if !c.tooLong(lr.head) {
				return nil
			}
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read message: %w", err)
		}
		if !owned {
			// The message's parts outlive the reader's buffer.
			line = bytes.Clone(line)
		}
		if !c.dispatch(line) {
			return nil
		}
	}
}

// dispatch serves one line, which it keeps; it reports false once the conn
// has stopped.
func (c *Conn) dispatch(line []byte) bool {
	m, rerr, replyID := parse(line)
	if rerr != nil {
		return c.reply(replyID, rerr)
	}
	switch m.kind {
	case kindRequest:
		if c.arrived != nil {
			c.arrived(&Request{ID: m.id, Method: m.method, Params: m.params})
		}
		return c.startRequest(m)
	case kindNotification:
		if m.method == "$/cancel_request" {
			c.cancelInbound(m.params)
		} else {
			n := &Notification{Method: m.method, Params: m.params}
			if c.noted != nil {
				c.noted(&Notification{Method: m.method, Params: m.params})
			}
			c.notes.push(n)
		}
	case kindResponse:
		c.deliver(m)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.stopped
}

// tooLong answers an oversize line. The code is InvalidRequest, not
// ParseError: the line was never parsed, so nothing says its JSON is bad;
// what is known is that it cannot be served as a request. Its id is
// recovered from the line's head when it comes before the payload (it does
// in every client seen), so the peer's call fails instead of hanging; else
// the id is null. An oversize response fails the matching Call instead.
func (c *Conn) tooLong(head []byte) bool {
	id, request, response := peekHead(head)
	c.log.Warn("jsonrpc: inbound line exceeds the limit", "max_line_bytes", c.max, "id", string(id))
	if response && !request && id != nil {
		c.complete(idKey(id), reply{err: ErrTooLarge})
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.stopped
	}
	if id == nil {
		id = jsonNull
	}
	return c.reply(id, NewError(InvalidRequest, "Invalid request: message too large", map[string]int{"maxLineBytes": c.max}))
}

// reply sends an error response for a line on its own goroutine: the reader
// never waits for the writer.
func (c *Conn) reply(id json.RawMessage, e *Error) bool {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	c.handlers.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.handlers.Done()
		c.writeResponse(nil, id, nil, e)
	}()
	return true
}

// inbound is the state of one inbound request.
type inbound struct {
	key    string
	cancel context.CancelCauseFunc

	mu        sync.Mutex // guards hooks and responded
	hooks     []func()
	responded bool
}

type inboundKey struct{}

func inboundFrom(ctx context.Context) *inbound {
	in, _ := ctx.Value(inboundKey{}).(*inbound)
	return in
}

func (c *Conn) startRequest(m message) bool {
	key := idKey(m.id)
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return false
	}
	if _, dup := c.inflight[key]; dup {
		c.mu.Unlock()
		return c.reply(m.id, errDuplicateID)
	}
	ctx, cancel := context.WithCancelCause(c.base)
	in := &inbound{key: key, cancel: cancel}
	ctx = context.WithValue(ctx, inboundKey{}, in)
	c.inflight[key] = in
	c.handlers.Add(1)
	c.mu.Unlock()

	req := &Request{ID: m.id, Method: m.method, Params: m.params}
	go func() {
		defer c.handlers.Done()
		defer in.cancel(nil)
		result, err := c.handle(ctx, req)
		var payload json.RawMessage
		var e *Error
		if err == nil {
			if payload, err = json.Marshal(result); err != nil {
				c.log.Error("jsonrpc: marshal result", "method", req.Method, "err", err)
				e = errInternalWire
			}
		} else {
			e = c.wireError(ctx, req, err)
		}
		c.writeResponse(in, req.ID, payload, e)
	}()
	return true
}

func (c *Conn) handle(ctx context.Context, req *Request) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: handler panicked", "method", req.Method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, errHandlerPanic
		}
	}()
	return c.h.Handle(ctx, req)
}

// wireError maps a handler's error to what is sent: internal detail is
// logged, never sent.
func (c *Conn) wireError(ctx context.Context, req *Request, err error) *Error {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Cause(ctx))) {
		return errCancelledWire
	}
	c.log.Error("jsonrpc: handler failed", "method", req.Method, "err", err)
	return errInternalWire
}

func (c *Conn) cancelInbound(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || !validID(p.RequestID) {
		c.log.Debug("jsonrpc: $/cancel_request without a valid requestId")
		return
	}
	c.mu.Lock()
	in := c.inflight[idKey(p.RequestID)]
	c.mu.Unlock()
	if in != nil {
		in.cancel(ErrCancelRequested)
	}
}

// deliver hands a response to its Call.
func (c *Conn) deliver(m message) {
	if !validID(m.id) {
		c.log.Warn("jsonrpc: response without a valid id ignored", "id", string(m.id))
		return
	}
	r := reply{result: m.result}
	if m.err != nil {
		var e Error
		if err := json.Unmarshal(m.err, &e); err != nil {
			r.err = fmt.Errorf("decode error response: %w", err)
		} else {
			r.peerErr = &e
		}
	}
	if !c.complete(idKey(m.id), r) {
		c.log.Warn("jsonrpc: response to no pending call ignored", "id", string(m.id))
	}
}

// complete completes the pending call with key, if any, with r.
func (c *Conn) complete(key string, r reply) bool {
	c.mu.Lock()
	pc := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if pc == nil {
		return false
	}
	r.seq = c.notes.received()
	pc.done <- r
	return true
}
