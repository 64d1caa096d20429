// Package todo is the update_plan dialect of meka's plans: the
// update_plan and patch_plan tools, the plan reminder pinned to the end of
// every request once a plan exists, the fold that derives the plan from
// the session's accepted calls, and the completion check that reopens a
// turn ending with open steps.
//
// The plan is a fold over the log, held in a Store: the tools compute the
// plan a call would leave without changing the store, record it in the
// result, and the fold adopts it once the session accepts the call. The
// store folds completed steps beyond the most recent five into a running
// count, so the reminder (at most ReminderCap bytes) stays bounded however
// long the run.
//
// Composition mirrors the spec: one store per session,
//
//	store := todo.NewStore()
//	c, err := todo.Plugin{Store: store, CheckCompletion: true}.Compose()
//
// and the tools, reminder and fold are registered together, because any
// of them alone is broken: a plan tool whose plan the model never sees
// again, or a reminder nothing can write. A plugin without a store is
// refused (ErrNoStore). A sub-agent's session gets its own store; a
// forked session, whose copied rows hold the parent's calls, sets
// FromTurn to start with a fresh plan.
//
// A run's plan travels as Store.Checkpoint; Restore turns it into the
// store of a fresh agent that continues it.
//
// It imports plan, agent, tool, session, model and permission; never the
// host, which wires it in.
package todo

import (
	"context"
	"errors"
	"fmt"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// ErrNoStore refuses a plugin built without a store: a plan tool that
// forgets is worse for the model than no plan tool at all.
var ErrNoStore = errors.New("the update_plan plugin has no store")

// Plugin composes the update_plan dialect for one session.
type Plugin struct {
	// Store holds the session's plan; required.
	Store *Store
	// CheckCompletion reopens a normal end of a turn while steps are
	// pending or in progress.
	CheckCompletion bool
	// MaxCompletionNudges bounds the reopenings of one turn: once
	// exhausted, the turn ends with StopIncomplete and a warning. Zero or
	// less means no ceiling.
	MaxCompletionNudges int
	// FromTurn, when positive, makes the fold ignore the plan calls of
	// turns before it, and compaction checkpoints taken before it. A
	// forked session passes the first turn it runs itself (the last
	// copied turn plus one), so it starts with a fresh plan while its own
	// calls still count; the host must pass the same value every time it
	// reopens the fork.
	FromTurn int64
}

// Composition is everything the dialect adds to an engine.
type Composition = agent.Extension

func (p Plugin) check() error {
	if p.Store == nil {
		return fmt.Errorf("compose %s: %w", FoldName, ErrNoStore)
	}
	return nil
}

// Compose returns the tools, the reminder, the fold and, with
// CheckCompletion, the completion check.
func (p Plugin) Compose() (Composition, error) {
	if err := p.check(); err != nil {
		return Composition{}, err
	}
	tools, _ := p.Tools()
	c := Composition{
		Tools:        tools,
		Contributors: []agent.RequestContributor{reminder{p.Store}},
		Folds:        []session.Fold{&Fold{store: p.Store, from: p.FromTurn}},
	}
	if p.CheckCompletion {
		c.Interceptors = []agent.StopInterceptor{completionCheck(p.Store, p.MaxCompletionNudges)}
	}
	return c, nil
}

// Tools returns update_plan and patch_plan over the plugin's store.
func (p Plugin) Tools() ([]tool.Tool, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return []tool.Tool{
		planTool{name: UpdateName, desc: updateDescription, schema: updateSchema, store: p.Store},
		planTool{name: PatchName, desc: patchDescription, schema: patchSchema, store: p.Store},
	}, nil
}

// Contributor returns the plan reminder.
func (p Plugin) Contributor() (agent.RequestContributor, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return reminder{p.Store}, nil
}

// Fold returns the fold that derives the plan into the store; give it to
// the engine's Folds.
func (p Plugin) Fold() (*Fold, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return &Fold{store: p.Store, from: p.FromTurn}, nil
}

// Interceptor returns the completion check, whatever CheckCompletion says;
// each call returns one with its own nudge count.
func (p Plugin) Interceptor() (agent.StopInterceptor, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return completionCheck(p.Store, p.MaxCompletionNudges), nil
}

// reminder puts the plan at the end of every request once it exists. It
// is rebuilt from the store each time and never persisted, so each
// request's reminder replaces the last rather than stacking.
type reminder struct{ store *Store }

var _ agent.RequestContributor = reminder{}

// Placement makes the plan the trailing system reminder seed 001 names:
// the last thing the model reads, never the user's words.
func (reminder) Placement() agent.Placement { return agent.PlaceReminder }

func (r reminder) Contribute(context.Context, agent.RequestInfo) []model.Part {
	st := r.store.state()
	text := Reminder(st.Items, st.Retired)
	if text == "" {
		return nil
	}
	return []model.Part{model.Text{Text: text}}
}
