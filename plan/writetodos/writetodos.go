// Package writetodos is the write_todos dialect of meka's plans: a strict
// session checklist the agent keeps but cannot quietly rewrite. The
// write_todos tool creates the list or appends to it, and changes items by
// stable ID (s1, s2, ...); existing items can never be removed, replaced
// or reordered, only marked cancelled. Every refusal carries the current
// list so the next call can succeed.
//
// The list is a fold over the session's log: each accepted call's result
// records the list it left (ids and timestamps included), and the fold
// adopts it; sessions older than that format are rebuilt from the calls'
// arguments or, failing that, from the rendered list in their results.
// Every request carries the list and the instruction to mark only
// evidenced work completed (at most ContextCap bytes); an optional
// completion check reopens a turn that ends with items pending or in
// progress. A new user turn marks the list stale for front doors
// (plan.Changed.Stale) until the agent next writes it; it never changes
// an item.
//
// It imports plan, agent, tool, session, model and permission; never the
// host, which wires it in. A sub-agent's session has its own Plugin and
// list.
package writetodos

import (
	"context"
	"slices"
	"sync"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Name is the tool's name and the dialect's, in plan.Changed and in
// compaction checkpoints.
const Name = "write_todos"

// Options configure a Plugin. The zero value is a list without the
// completion check, on the system clock.
type Options struct {
	// Now stamps items' at and completedAt; nil means time.Now.
	Now func() time.Time
	// CheckCompletion reopens a normal end of a turn while items are
	// pending or in progress.
	CheckCompletion bool
	// MaxCompletionNudges bounds the reopenings of one turn; once
	// exhausted the turn ends with StopIncomplete and a warning. Zero or
	// less means no ceiling.
	MaxCompletionNudges int
}

// Plugin is one session's write_todos list. Build one per engine.
type Plugin struct {
	opts Options
	fold *Fold

	mu sync.Mutex // guards the fields below
	// st is the list as the folded log adds it up.
	st state
	// pending are the outcomes of calls that ran this round and whose
	// results the engine has not appended yet: a second call in the round
	// computes from the first's.
	pending []outcome
	// dirty is set when a live change has not been taken as an event.
	dirty bool
}

type outcome struct {
	callID string
	st     state
}

// New returns a session's list, empty until the engine's replay fills it.
func New(opts Options) *Plugin {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Plugin{opts: opts}
	p.fold = &Fold{p: p}
	return p
}

// Composition is everything the dialect adds to an engine.
type Composition = agent.Extension

// Compose returns the tool, the per-request list, the fold and, with
// CheckCompletion, the completion check.
func (p *Plugin) Compose() Composition {
	c := Composition{Tools: p.Tools(), Contributors: []agent.RequestContributor{p.Contributor()},
		Folds: []session.Fold{p.fold}}
	if p.opts.CheckCompletion {
		c.Interceptors = []agent.StopInterceptor{p.Interceptor()}
	}
	return c
}

// Tools returns write_todos.
func (p *Plugin) Tools() []tool.Tool { return []tool.Tool{writeTool{p}} }

// Fold returns the fold that derives the list; give it to the engine's
// Folds.
func (p *Plugin) Fold() *Fold { return p.fold }

// Contributor returns the list every request carries once it exists.
func (p *Plugin) Contributor() agent.RequestContributor { return contributor{p} }

// Interceptor returns the completion check, whatever CheckCompletion
// says; each call returns one with its own nudge count.
func (p *Plugin) Interceptor() agent.StopInterceptor {
	return completionCheck(p)
}

// Todos returns the list, in order.
func (p *Plugin) Todos() []Todo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.st.Items)
}

// Stale reports whether a user turn has started since the agent last
// wrote the list.
func (p *Plugin) Stale() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.Stale
}

func (p *Plugin) state() state {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.clone()
}

// head is the list the next call computes from. Callers hold mu.
func (p *Plugin) head() state {
	if n := len(p.pending); n > 0 {
		return p.pending[n-1].st
	}
	return p.st
}

// contributor puts the list, and the line asking for evidence before
// completion, into every request once the list exists. It is rebuilt each
// time and never persisted.
type contributor struct{ p *Plugin }

// Placement puts the list into the system prompt of every request, as
// seed 003 says, never among the user's words.
func (contributor) Placement() agent.Placement { return agent.PlaceSystem }

func (c contributor) Contribute(context.Context, agent.RequestInfo) []model.Part {
	text := Context(c.p.state().Items)
	if text == "" {
		return nil
	}
	return []model.Part{model.Text{Text: text}}
}
