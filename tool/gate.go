package tool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"meka.dev/meka/permission"
)

// DefaultApprovalTimeout is how long an approval request waits for an
// answer before it counts as Deny.
const DefaultApprovalTimeout = 30 * time.Minute

// Gate decides at dispatch whether a call may run, from the level the
// session holds at that moment. It is safe for concurrent use.
type Gate struct {
	// Level returns the session's level now; it is read at every call so
	// that a change applies to the next call, even inside a running turn.
	Level func() permission.Level
	// Overrides replaces the level a tool declares ([tools.tool_permissions]).
	Overrides map[string]permission.Level
	// Approvals, when it returns true, puts a call above the session's
	// level to Asker instead of refusing it. Like Level it is read at every
	// call, so switching approvals applies to the next call. Nil means off.
	Approvals func() bool
	// Asker is asked when Approvals is on. Nil denies.
	Asker permission.Asker
	// Timeout bounds an approval; zero means DefaultApprovalTimeout.
	Timeout time.Duration
	// Parent, when set, holds the sticky answers this gate reads and
	// records: a sub-agent's gate shares its parent session's.
	Parent *Gate

	mu     sync.Mutex // guards sticky
	sticky map[string]permission.Decision
}

// Verdict is a Gate's decision on one call.
type Verdict struct {
	Allowed bool
	// Level is what the call runs at: the session's level, or the level the
	// call needs when a person approved it.
	Level permission.Level
	// Reason tells the model why a call was refused.
	Reason string
}

// Needs returns the level a call of t needs, overrides applied.
func (g *Gate) Needs(t Tool) permission.Level {
	s := t.Spec()
	if l, ok := g.Overrides[s.Name]; ok {
		return l
	}
	return s.Level
}

// Check decides whether call may run.
func (g *Gate) Check(ctx context.Context, t Tool, call Call) Verdict {
	has := permission.Unrestricted
	if g.Level != nil {
		has = g.Level()
	}
	needs := g.Needs(t)
	name := t.Spec().Name
	if has == permission.None {
		return Verdict{Reason: fmt.Sprintf("%s was refused: this session's permission level is none, so no tool may run.", name)}
	}
	approvals := g.Approvals != nil && g.Approvals()
	// sticky keys the remembered answers: one for a call that needs more
	// than its tool does is not one for the tool.
	sticky := name
	if has.Allows(needs) {
		cl, ok := t.(CallLeveler)
		if !ok || !approvals {
			return Verdict{Allowed: true, Level: has}
		}
		c := call
		c.Level = has
		n := cl.CallLevel(c)
		if has.Allows(n) {
			return Verdict{Allowed: true, Level: has}
		}
		needs, sticky = n, name+"@"+n.String()
	}
	refusal := fmt.Sprintf("%s was refused: it needs the %s permission level and this session has %s. Do the work with tools your level allows, or ask the user to raise the level.", name, needs, has)
	if !approvals {
		return Verdict{Reason: refusal}
	}
	d, ok := g.root().stickyFor(sticky)
	if ok {
		if d.Allowed() {
			return Verdict{Allowed: true, Level: needs}
		}
		return Verdict{Reason: fmt.Sprintf("%s was refused: the user chose to always deny it in this session.", name)}
	}
	d = g.ask(ctx, permission.Request{
		SessionID: call.SessionID, CallID: call.ID, Tool: name,
		Title: Title(t, call.Arguments), Arguments: call.Arguments,
		Needs: needs, Has: has,
	})
	if d.Sticky() {
		g.root().remember(sticky, d)
	}
	if d.Allowed() {
		return Verdict{Allowed: true, Level: needs}
	}
	return Verdict{Reason: fmt.Sprintf("%s was refused: the user denied this call.", name)}
}

// Confirm is Check for a call someone asked to have put to a person (a
// hook's "ask"): a call the level allows is asked anyway, with reason in
// its title; without approvals it is refused. A call the level refuses is
// refused or asked as Check does. No answer is remembered.
func (g *Gate) Confirm(ctx context.Context, t Tool, call Call, reason string) Verdict {
	v := g.Check(ctx, t, call)
	if !v.Allowed {
		return v
	}
	name := t.Spec().Name
	if g.Approvals == nil || !g.Approvals() {
		return Verdict{Reason: fmt.Sprintf("%s was refused: a hook asked for a person's approval (%s), and approvals are off in this session.", name, reason)}
	}
	title := Title(t, call.Arguments)
	if reason != "" {
		title += " (a hook asks: " + reason + ")"
	}
	d := g.ask(ctx, permission.Request{SessionID: call.SessionID, CallID: call.ID, Tool: name,
		Title: title, Arguments: call.Arguments, Needs: g.Needs(t), Has: v.Level})
	if d.Allowed() {
		return v
	}
	return Verdict{Reason: fmt.Sprintf("%s was refused: the user denied this call.", name)}
}

func (g *Gate) ask(ctx context.Context, req permission.Request) permission.Decision {
	if g.Asker == nil {
		return permission.Deny
	}
	timeout := g.Timeout
	if timeout <= 0 {
		timeout = DefaultApprovalTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		d   permission.Decision
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		d, err := g.Asker.Ask(ctx, req)
		ch <- answer{d, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			return permission.Deny
		}
		return a.d
	case <-ctx.Done():
		return permission.Deny
	}
}

// root is the gate whose sticky answers g uses.
func (g *Gate) root() *Gate {
	for range 64 { // a bound on nesting, far above any depth limit
		if g.Parent == nil {
			break
		}
		g = g.Parent
	}
	return g
}

func (g *Gate) stickyFor(name string) (permission.Decision, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d, ok := g.sticky[name]
	return d, ok
}

func (g *Gate) remember(name string, d permission.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sticky == nil {
		g.sticky = make(map[string]permission.Decision)
	}
	g.sticky[name] = d
}

// Forget drops every sticky answer (a session closed or swept). A gate
// sharing its parent's answers leaves them to the parent.
func (g *Gate) Forget() {
	if g.Parent != nil {
		return
	}
	g.mu.Lock()
	g.sticky = nil
	g.mu.Unlock()
}
