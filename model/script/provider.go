package script

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"meka.dev/meka/model"
)

// Name is the provider name the script provider reports and tags its
// thinking with.
const Name = "script"

// errConnection stands in for the network error of a scripted connection
// failure (an error round with status 0).
var errConnection = errors.New("scripted connection failure")

// Provider plays a Script: each call to Stream consumes the next round.
// It is safe for concurrent use; concurrent requests take rounds in the
// order they arrive. It never retries: a scripted error is what the caller
// sees, so a test can script exactly what its retry logic meets.
type Provider struct {
	script *Script

	mu       sync.Mutex // guards next and requests
	next     int
	requests []*model.Request
}

var _ model.Provider = (*Provider)(nil)

// New returns a provider playing s from its first round.
func New(s *Script) *Provider {
	if s == nil {
		s = &Script{}
	}
	return &Provider{script: s}
}

// Name reports "script".
func (p *Provider) Name() string { return Name }

// Requests returns a copy of every request the provider was given, in
// order, including any past the end of the script.
func (p *Provider) Requests() []*model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}

// Remaining reports how many rounds have not been played.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.script.Rounds) - p.next
}

// take records req and returns the round that answers it.
func (p *Provider) take(req *model.Request) (Round, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, cloneRequest(req))
	n := len(p.requests)
	if p.next >= len(p.script.Rounds) {
		return Round{}, fmt.Errorf("play request %d: %w (the script has %d rounds)", n, model.ErrScriptExhausted, len(p.script.Rounds))
	}
	r := p.script.Rounds[p.next]
	p.next++
	return r, nil
}

// Stream plays the next round: its thinking and text in a few chunks, its
// tool calls as a name delta followed by argument pieces, then Completed.
func (p *Provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		r, err := p.take(req)
		if err != nil {
			yield(nil, err)
			return
		}
		if r.Error != nil {
			yield(nil, r.Error.ModelError(Name))
			return
		}
		emit := func(ev model.Event) bool {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return false
			}
			return yield(ev, nil)
		}
		for _, s := range Chunks(r.Thinking, 3) {
			if !emit(model.ThinkingDelta{Text: s}) {
				return
			}
		}
		for _, s := range Chunks(r.Text, 3) {
			if !emit(model.TextDelta{Text: s}) {
				return
			}
		}
		for i, c := range r.ToolCalls {
			if !emit(model.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name}) {
				return
			}
			for _, s := range Chunks(c.Args(), 3) {
				if !emit(model.ToolCallDelta{Index: i, Arguments: s}) {
					return
				}
			}
		}
		emit(model.Completed{Response: model.Response{
			Message: r.Message(Name),
			Usage:   r.Usage,
			Stop:    r.StopReason(),
			Model:   Name,
		}})
	}
}

// ModelError is the error a provider named provider reports for e.
func (e *Error) ModelError(provider string) *model.Error {
	me := &model.Error{Provider: provider, Status: e.Status, Body: e.Body}
	if h := e.RetryAfterHeader(); h != "" {
		me.RetryAfter = model.ParseRetryAfter(h, time.Now())
	}
	if e.Status == 0 {
		me.Err = errConnection
	}
	return me
}

// Chunks splits s into at most n pieces of about equal length, on rune
// boundaries, so that streaming paths see text arrive in parts.
func Chunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := max((len(s)+n-1)/n, 1)
	var out []string
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

func cloneRequest(req *model.Request) *model.Request {
	if req == nil {
		return nil
	}
	c := *req
	c.Tools = slices.Clone(req.Tools)
	c.Messages = make([]model.Message, len(req.Messages))
	for i, m := range req.Messages {
		c.Messages[i] = model.Message{Role: m.Role, Parts: slices.Clone(m.Parts)}
	}
	return &c
}
