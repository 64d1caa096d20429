package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// call is an outbound request waiting for its response.
type call struct {
	done chan reply // buffered: the reader never waits on it
}

type reply struct {
	result  json.RawMessage
	peerErr *Error // the peer's error response
	err     error  // a local failure: ErrClosed, ErrTooLarge, a malformed error
	seq     uint64 // notifications received before this response
}

// Call sends a request to the peer and waits for its response, decoding the
// result into result (may be nil). Outbound ids are numbers. ctx's
// cancellation sends $/cancel_request {requestId} to the peer and, once that
// is written, returns ctx's error. A peer error comes back as *Error; after
// Serve has stopped reading, Call fails with ErrClosed.
//
// Call returns only once every notification read before the response has
// been handled, so a client sees a turn's updates before its answer (except
// when called with HandleNotification's ctx, which must not wait for itself).
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("call %s: %w", method, err)
	}
	id := strconv.AppendInt(nil, c.nextID.Add(1), 10)
	msg, err := encodeRequest(id, method, params)
	if err != nil {
		return fmt.Errorf("call %s: %w", method, err)
	}
	key := idKey(id)
	pc := &call{done: make(chan reply, 1)}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return fmt.Errorf("call %s: %w", method, ErrClosed)
	}
	c.pending[key] = pc
	c.mu.Unlock()

	if err := c.send(ctx, msg); err != nil {
		c.forget(key)
		return fmt.Errorf("call %s: %w", method, err)
	}
	var r reply
	select {
	case r = <-pc.done:
	case <-ctx.Done():
		if c.forget(key) {
			c.cancelOutbound(ctx, id)
			return fmt.Errorf("call %s: %w", method, ctx.Err())
		}
		r = <-pc.done // the response won the race
	}
	c.notes.await(ctx, r.seq)
	switch {
	case r.peerErr != nil:
		return r.peerErr
	case r.err != nil:
		return fmt.Errorf("call %s: %w", method, r.err)
	case result != nil && r.result != nil:
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("call %s: decode result: %w", method, err)
		}
	}
	return nil
}

// forget removes a pending call; false means its reply is already on its way.
func (c *Conn) forget(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pending[key]; !ok {
		return false
	}
	delete(c.pending, key)
	return true
}

// cancelOutbound tells the peer a call was abandoned. Best effort: the call
// has already failed locally whatever happens here.
func (c *Conn) cancelOutbound(ctx context.Context, id []byte) {
	msg, _ := encodeRequest(nil, "$/cancel_request", map[string]json.RawMessage{"requestId": id})
	if err := c.send(context.WithoutCancel(ctx), msg); err != nil {
		c.log.Debug("jsonrpc: send $/cancel_request", "id", string(id), "err", err)
	}
}

// Notify sends a notification. It fails with ctx's error if ctx ends
// before the message could be written, and with ErrClosed after Serve
// returned.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("notify %s: %w", method, err)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("notify %s: %w", method, ErrClosed)
	}
	msg, err := encodeRequest(nil, method, params)
	if err != nil {
		return fmt.Errorf("notify %s: %w", method, err)
	}
	if err := c.send(ctx, msg); err != nil {
		return fmt.Errorf("notify %s: %w", method, err)
	}
	return nil
}

// AfterResponse registers fn to run right after the response to the
// request that ctx belongs to has been written, and before anything else is
// written, so a handler can order e.g. session/update notifications after
// its response is on the wire. Outside a request ctx, or once the response
// is written, it runs fn at once.
//
// fn runs on the handler's goroutine, with the output reserved for the
// request: messages sent with ctx (or a context derived from it) go out,
// while anything sent with another context waits until fn returns. So fn
// must send with ctx; sending with an unrelated context from fn deadlocks.
// Keep fn short: it holds up every other writer.
func AfterResponse(ctx context.Context, fn func()) {
	if in := inboundFrom(ctx); in != nil {
		in.mu.Lock()
		if !in.responded {
			in.hooks = append(in.hooks, fn)
			in.mu.Unlock()
			return
		}
		in.mu.Unlock()
	}
	fn()
}

// acquire takes the write token for owner (the request the writing context
// belongs to, or nil), waiting while another request's AfterResponse hooks
// hold the output. ctx bounds the wait.
func (c *Conn) acquire(ctx context.Context, owner *inbound) error {
	for {
		select {
		case c.wsem <- struct{}{}:
		default:
			select {
			case c.wsem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if c.floor == nil || c.floor == owner {
			return nil
		}
		free := c.floorFree
		<-c.wsem
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Conn) release() { <-c.wsem }

// write writes one line; the caller holds the write token.
func (c *Conn) write(msg []byte) error {
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.w.Write(msg); err != nil {
		c.werr = fmt.Errorf("write message: %w", err)
		c.log.Error("jsonrpc: write failed; further writes will fail", "err", err)
	}
	return c.werr
}

func (c *Conn) send(ctx context.Context, msg []byte) error {
	if err := c.acquire(ctx, inboundFrom(ctx)); err != nil {
		return err
	}
	defer c.release()
	return c.write(msg)
}

// writeResponse writes the response to in (nil for the reader's error
// replies), then runs in's AfterResponse hooks holding the output for it.
// It waits for the output as long as it takes: Serve waits for responses.
func (c *Conn) writeResponse(in *inbound, id, result json.RawMessage, e *Error) {
	msg := encodeResponse(id, result, e)
	if in != nil {
		// Before the write: the peer may reuse the id once it has the response.
		c.mu.Lock()
		if c.inflight[in.key] == in {
			delete(c.inflight, in.key)
		}
		c.mu.Unlock()
	}
	_ = c.acquire(context.Background(), in)
	_ = c.write(msg) // a failure is logged by write; nobody else to tell
	if in == nil {
		c.release()
		return
	}
	in.mu.Lock()
	hooks := in.hooks
	in.hooks, in.responded = nil, true
	in.mu.Unlock()
	if len(hooks) == 0 {
		c.release()
		return
	}
	c.floor, c.floorFree = in, make(chan struct{})
	c.release()
	for _, fn := range hooks {
		c.runHook(fn)
	}
	_ = c.acquire(context.Background(), in) // the floor is in's: no wait on it
	close(c.floorFree)
	c.floor, c.floorFree = nil, nil
	c.release()
}

func (c *Conn) runHook(fn func()) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: AfterResponse hook panicked", "panic", p)
		}
	}()
	fn()
}
