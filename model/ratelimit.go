package model

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is what a provider's response headers said of the account's
// limits: OpenAI's x-ratelimit-* and Anthropic's anthropic-ratelimit-*.
// A count the headers did not give is -1.
type RateLimit struct {
	Requests Limit `json:"requests"`
	Tokens   Limit `json:"tokens"`
	// At is when the headers were read.
	At time.Time `json:"at"`
}

// Limit is one limited quantity.
type Limit struct {
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset,omitzero"`
}

// Known reports whether l has a limit and what remains of it.
func (l Limit) Known() bool { return l.Limit > 0 && l.Remaining >= 0 }

// Share is the part of l that remains, 0 to 1; 1 when unknown.
func (l Limit) Share() float64 {
	if !l.Known() {
		return 1
	}
	return min(float64(l.Remaining)/float64(l.Limit), 1)
}

// Lowest is the smaller share left of requests and tokens, and which.
func (r RateLimit) Lowest() (share float64, what string, l Limit) {
	if r.Tokens.Share() < r.Requests.Share() {
		return r.Tokens.Share(), "tokens", r.Tokens
	}
	return r.Requests.Share(), "requests", r.Requests
}

// String says r the way /status shows it.
func (r RateLimit) String() string {
	var parts []string
	for _, q := range []struct {
		name string
		l    Limit
	}{{"requests", r.Requests}, {"tokens", r.Tokens}} {
		if !q.l.Known() {
			continue
		}
		s := fmt.Sprintf("%d of %d %s left", q.l.Remaining, q.l.Limit, q.name)
		if !q.l.Reset.IsZero() {
			s += fmt.Sprintf(" (resets in %s)", max(q.l.Reset.Sub(r.At), 0).Round(time.Second))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ParseRateLimit reads the rate-limit headers of a response received at
// now. It reports false when there are none. Negative or unreadable
// values (Azure sends -1) are unknown, never zero.
func ParseRateLimit(h http.Header, now time.Time) (*RateLimit, bool) {
	r := &RateLimit{Requests: Limit{Limit: -1, Remaining: -1}, Tokens: Limit{Limit: -1, Remaining: -1}, At: now}
	found := false
	read := func(l *Limit, limit, remaining, reset string, resetAbs bool) {
		if v, ok := count(h.Get(limit)); ok {
			l.Limit, found = v, true
		}
		if v, ok := count(h.Get(remaining)); ok {
			l.Remaining, found = v, true
		}
		v := h.Get(reset)
		if resetAbs {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				l.Reset = t
			}
		} else if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			l.Reset = now.Add(d)
		}
	}
	read(&r.Requests, "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", false)
	read(&r.Tokens, "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", false)
	read(&r.Requests, "anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset", true)
	read(&r.Tokens, "anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset", true)
	return r, found
}

func count(s string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return v, err == nil && v >= 0
}

// RateLimited returns emit setting the rate limits of the headers h
// (received at now) on the Completed event, for adapters to wrap their
// emit with.
func RateLimited(h http.Header, now time.Time, emit func(Event) bool) func(Event) bool {
	rl, ok := ParseRateLimit(h, now)
	if !ok {
		return emit
	}
	return func(ev Event) bool {
		if c, isC := ev.(Completed); isC {
			c.Response.RateLimit = rl
			ev = c
		}
		return emit(ev)
	}
}

// RateBook keeps the newest rate limit a profile's responses reported,
// for every session on the profile: the limits are the account's, not
// one session's. It is safe for concurrent use.
type RateBook struct {
	mu   sync.Mutex
	last *RateLimit
}

// Last is the newest rate limit recorded; nil before any.
func (b *RateBook) Last() *RateLimit {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func (b *RateBook) record(r *RateLimit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil || !r.At.Before(b.last.At) {
		b.last = r
	}
}

// WithRateBook returns p recording in b the rate limit of every response.
func WithRateBook(p Provider, b *RateBook) Provider { return &booked{Provider: p, book: b} }

type booked struct {
	Provider
	book *RateBook
}

func (p *booked) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for ev, err := range p.Provider.Stream(ctx, req) {
			if c, ok := ev.(Completed); ok && c.Response.RateLimit != nil {
				p.book.record(c.Response.RateLimit)
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}
