package jsonrpc

import (
	"context"
	"runtime/debug"
	"sync"
)

// notifications is the unbounded queue between the reader and the one
// goroutine that handles notifications in order. Unbounded because the
// reader must never wait for a handler (a bounded queue would have to block
// or drop); the peer's own sending rate bounds it.
type notifications struct {
	mu       sync.Mutex // guards the fields below
	queue    []*Notification
	closed   bool
	read     uint64        // notifications pushed
	handled  uint64        // notifications handled
	progress chan struct{} // made by a waiter, closed when handled advances

	wake chan struct{} // capacity 1: a pending wake-up for the loop
}

type notificationKey struct{}

func (q *notifications) push(n *Notification) {
	q.mu.Lock()
	q.queue = append(q.queue, n)
	q.read++
	q.mu.Unlock()
	q.signal()
}

func (q *notifications) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *notifications) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *notifications) received() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.read
}

// next returns the next notification, or nil once the queue is closed and
// drained: notifications already read are handled even as Serve ends.
func (q *notifications) next() *Notification {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 {
		if q.closed {
			return nil
		}
		q.mu.Unlock()
		<-q.wake
		q.mu.Lock()
	}
	n := q.queue[0]
	q.queue[0] = nil
	q.queue = q.queue[1:]
	if len(q.queue) == 0 {
		q.queue = nil // let the backing array go
	}
	return n
}

func (q *notifications) done() {
	q.mu.Lock()
	q.handled++
	if q.progress != nil {
		close(q.progress)
		q.progress = nil
	}
	q.mu.Unlock()
}

// await waits until the first seq notifications have been handled, or ctx
// ends. It returns at once on the notification goroutine itself.
func (q *notifications) await(ctx context.Context, seq uint64) {
	if ctx.Value(notificationKey{}) != nil {
		return
	}
	for {
		q.mu.Lock()
		if q.handled >= seq {
			q.mu.Unlock()
			return
		}
		if q.progress == nil {
			q.progress = make(chan struct{})
		}
		ch := q.progress
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Conn) notifyLoop(ctx context.Context) {
	for n := c.notes.next(); n != nil; n = c.notes.next() {
		c.handleNotification(ctx, n)
		c.notes.done()
	}
}

func (c *Conn) handleNotification(ctx context.Context, n *Notification) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("jsonrpc: notification handler panicked", "method", n.Method, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	c.h.HandleNotification(ctx, n)
}
