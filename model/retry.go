package model

import (
	"context"
	"errors"
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
