package model

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
)

// Profile is a provider under the name of the profile it was built for.
type Profile struct {
	Name     string
	Provider Provider
	// Model is the model the profile asks for, for telemetry and notices.
	Model string
}

// Fallback is a provider that moves down a chain of profiles: a call
// whose provider failed before any output with a failure that may pass
// (429, 5xx, overload, a connection failure or timeout), once that
// provider's own retries are spent, is made again, whole, by the next
// profile's. The move is announced by a Switched event and sticks: later
// calls start on the profile that last answered. The request is
// provider-neutral, so a profile of another wire format takes it as is;
// each adapter leaves out the thinking another provider produced.
type Fallback struct {
	chain  []Profile
	active atomic.Int32
}

// NewFallback returns a provider trying chain in order; chain[0] is the
// profile's own.
func NewFallback(chain []Profile) *Fallback {
	return &Fallback{chain: chain}
}

// Switched reports that a call moved from one profile to the next: the
// events that follow are the next one's.
type Switched struct {
	From, To Profile
	// Err is why From gave up.
	Err error
	// Dropped counts the thinking parts of the request that To's wire
	// format does not take back (another provider's), by provider.
	Dropped map[string]int
}

func (Switched) isEvent() {}

// Name reports the wire format of the profile calls start on.
func (f *Fallback) Name() string { return f.chain[f.active.Load()].Provider.Name() }

// Active is the profile calls start on.
func (f *Fallback) Active() Profile { return f.chain[f.active.Load()] }

// Stream makes the call on the active profile, moving down the chain as
// the type describes.
func (f *Fallback) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		i := int(f.active.Load())
		for {
			p := f.chain[i]
			started := false
			var failed error
			for ev, err := range p.Provider.Stream(ctx, req) {
				if err != nil {
					if !started && i+1 < len(f.chain) && ctx.Err() == nil && mayPass(err) {
						failed = err
						break
					}
					yield(nil, err)
					return
				}
				started = true
				if !yield(ev, nil) {
					return
				}
			}
			if failed == nil {
				return
			}
			next := f.chain[i+1]
			f.active.CompareAndSwap(int32(i), int32(i+1))
			i++
			if !yield(Switched{From: p, To: next, Err: failed, Dropped: foreignThinking(req, next.Provider.Name())}, nil) {
				return
			}
		}
	}
}

// mayPass reports a failure another provider may not share.
func mayPass(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Retryable()
}

// foreignThinking counts the thinking parts of req that the provider
// named to will not be sent, by the provider that made them.
func foreignThinking(req *Request, to string) map[string]int {
	var n map[string]int
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if t, ok := p.(Thinking); ok && t.Provider != to {
				if n == nil {
					n = map[string]int{}
				}
				n[t.Provider]++
			}
		}
	}
	return n
}
