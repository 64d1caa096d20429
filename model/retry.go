package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"
)

// Retry describes how adapters retry a failed call before any output.
// The zero value means the defaults.
type Retry struct {
	// Attempts is the total number of tries; default 4.
	Attempts int
	// Base is the first backoff, doubled each time; default 500ms.
	Base time.Duration
	// Max caps one wait, including a provider's Retry-After; default 30s.
	Max time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 4
	}
	if r.Base <= 0 {
		r.Base = 500 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 30 * time.Second
	}
	return r
}

// Do calls try until it succeeds, fails with an error that is not a
// retryable *Error, or the attempts run out. It waits between tries with
// exponential backoff, or as long as the provider's Retry-After asked,
// bounded by Max.
func (r Retry) Do(ctx context.Context, try func() error) error {
	r = r.withDefaults()
	wait := r.Base
	for attempt := 1; ; attempt++ {
		err := try()
		var perr *Error
		if err == nil || attempt >= r.Attempts || !errors.As(err, &perr) || !perr.Retryable() {
			return err
		}
		d := wait
		if perr.RetryAfter > 0 {
			d = perr.RetryAfter
		}
		d = min(d, r.Max)
		wait = min(wait*2, r.Max)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Timeouts bound how long one call waits for the provider; zero means no
// bound. Connecting is bounded by the HTTP client's dialer (see Dialer).
type Timeouts struct {
	// FirstToken bounds the wait from sending a request to its first
	// streamed event.
	FirstToken time.Duration
	// StreamIdle bounds the wait between two events once streaming.
	StreamIdle time.Duration
}

// TimeoutError is a wait for the provider that ran out. Wrapped in an
// *Error, it is retryable like any connection failure.
type TimeoutError struct {
	Wait  string // the setting: connect_timeout, first_token_timeout, stream_idle_timeout
	After time.Duration
}

func (e *TimeoutError) Error() string {
	switch e.Wait {
	case "connect_timeout":
		return fmt.Sprintf("could not connect within %s (connect_timeout)", e.After)
	case "first_token_timeout":
		return fmt.Sprintf("no reply within %s of the request (first_token_timeout)", e.After)
	}
	return fmt.Sprintf("the reply stalled: nothing for %s (stream_idle_timeout)", e.After)
}

// Timeout reports true, as net.Error does for a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// watchdog cancels an attempt whose provider stays silent too long.
type watchdog struct {
	t      Timeouts
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	timer  *time.Timer
}

func (t Timeouts) watch(cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{t: t, cancel: cancel}
	w.arm(t.FirstToken, "first_token_timeout")
	return w
}

func (w *watchdog) arm(d time.Duration, wait string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if d > 0 {
		w.timer = time.AfterFunc(d, func() { w.cancel(&TimeoutError{Wait: wait, After: d}) })
	}
}

// event is called for each event: the idle bound starts over.
func (w *watchdog) event() { w.arm(w.t.StreamIdle, "stream_idle_timeout") }

func (w *watchdog) stop() { w.arm(0, "") }

// Stream is the retry policy of a streamed call: call makes one attempt
// under its own context, passing each event to emit (which reports false
// once the consumer stopped). An attempt that fails before its first event
// is retried as r allows; once an event has been yielded an error ends the
// stream, since the caller has seen output. An attempt whose provider
// stays silent past t ends with a retryable *Error wrapping a
// *TimeoutError. A ctx canceled while waiting to retry is reported as the
// cancellation, not as what was being retried.
func (r Retry) Stream(ctx context.Context, provider string, t Timeouts, call func(ctx context.Context, emit func(Event) bool) error) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var started, stopped bool
		var final error
		err := r.Do(ctx, func() error {
			actx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			w := t.watch(cancel)
			defer w.stop()
			err := call(actx, func(ev Event) bool {
				w.event()
				started = true
				if !yield(ev, nil) {
					stopped = true
				}
				return !stopped
			})
			var te *TimeoutError
			if err != nil && ctx.Err() == nil && errors.As(context.Cause(actx), &te) {
				err = &Error{Provider: provider, Err: te}
			}
			if started {
				final = err
				return nil
			}
			return err
		})
		if !started {
			final = err
			if err != nil && ctx.Err() != nil {
				final = fmt.Errorf("call %s: %w", provider, context.Cause(ctx))
			}
		}
		if final != nil && !stopped {
			yield(nil, final)
		}
	}
}
