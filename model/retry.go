package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
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

// Stream is the retry policy of a streamed call: call makes one attempt,
// passing each event to emit (which reports false once the consumer
// stopped). An attempt that fails before its first event is retried as r
// allows; once an event has been yielded an error ends the stream, since
// the caller has seen output. A ctx canceled while waiting to retry is
// reported as the cancellation, not as what was being retried.
func (r Retry) Stream(ctx context.Context, provider string, call func(emit func(Event) bool) error) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		var started, stopped bool
		emit := func(ev Event) bool {
			started = true
			if !yield(ev, nil) {
				stopped = true
			}
			return !stopped
		}
		var final error
		err := r.Do(ctx, func() error {
			err := call(emit)
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
