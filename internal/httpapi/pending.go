package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"
)

// pending is what approvals and MCP elicitations share: a request put to
// whoever drives the session over HTTP and answered once, by a client or
// by the server when nobody answers. Its fields are guarded by the
// attached session's mutex.
type pending[R any] struct {
	Status string `json:"status"` // pending or resolved
	By     string `json:"by,omitempty"`

	result R      // the answer that stands, once resolved
	answer chan R // holds the one answer for the waiting gate
}

func newPending[R any]() pending[R] {
	return pending[R]{Status: "pending", answer: make(chan R, 1)}
}

func (p *pending[R]) open() bool { return p.Status == "pending" }

// errExpired says nobody answered in time.
var errExpired = errors.New("no answer in time")

// wait returns the answer, or errExpired after d, or ctx's error when the
// turn ends first; the caller then settles the request itself. d is a
// duration, not a deadline, so that an injected clock cannot shorten it.
func (p *pending[R]) wait(ctx context.Context, d time.Duration) (R, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var zero R
	select {
	case r := <-p.answer:
		return r, nil
	case <-timer.C:
		return zero, errExpired
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// settle records r as the answer unless one stands already. It returns
// the answer that stands and whether it is this one; fill, run under mu
// when it is, sets the request's own view of the answer.
func (p *pending[R]) settle(mu *sync.Mutex, r R, by string, fill func()) (R, bool) {
	mu.Lock()
	if !p.open() {
		r = p.result
		mu.Unlock()
		return r, false
	}
	p.Status, p.By, p.result = "resolved", by, r
	fill()
	mu.Unlock()
	p.answer <- r
	return r, true
}

// opener is a request embedding pending: *approval or *elicitation.
type opener[V any] interface {
	*V
	open() bool
}

// listOpen copies the requests of m still waiting for an answer.
func listOpen[V any, P opener[V]](mu *sync.Mutex, m map[string]P) []V {
	mu.Lock()
	defer mu.Unlock()
	items := []V{}
	for _, v := range m {
		if v.open() {
			items = append(items, *v)
		}
	}
	return items
}
