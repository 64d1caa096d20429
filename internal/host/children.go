package host

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// A sub-agent's session is an ordinary session with a parent: its own log,
// engine, checklist, limits and compaction, opened only through its parent
// and closed with it. What makes it a sub-agent is here: its level never
// exceeds its parent's, its approvals and file access go through whoever
// is attached to the parent, its sticky answers are the parent's, and it
// has no background tasks.

// Definition is what a named sub-agent definition changes in the sessions
// that run it.
type Definition struct {
	// Tools, when set, are globs of the tools offered (Registry.Allow).
	Tools []string
	// Prompt is added to the system prompt.
	Prompt string
	// MaxTurns bounds the model requests of one turn; 0 keeps the host's.
	MaxTurns int
}

// ChildOptions describe a sub-agent's session.
type ChildOptions struct {
	// CallID is the parent's call that spawns it.
	CallID string
	// Title is its label: the card title a person sees.
	Title string
	// Agent names its definition, "" for none.
	Agent string
	// Profile is its profile, "" for the parent's.
	Profile string
	// Permission is the level asked for; the child gets the lower of it
	// and the parent's level now. Nil is the parent's.
	Permission *permission.Level
	// Isolation is IsolationWorktree for a git worktree of its own
	// (isolation.go), "" to work in the parent's workspace.
	Isolation string
}

// Errors of sub-agent sessions.
var (
	// ErrSubAgent is returned for a sub-agent's session opened or forked
	// other than through its parent.
	ErrSubAgent = errors.New("session is a sub-agent's: continue it with agent_followup from its parent")
	// ErrNotChild is returned by Child for a session that is not a
	// sub-agent of the session asked.
	ErrNotChild = errors.New("session is not a sub-agent of this session")
)

// childPrompt frames a sub-agent's system prompt.
const childPrompt = `# Sub-agent
You are a sub-agent: another agent delegated the task in the user message to you. Work on it with your tools until it is done. Your final reply is your report back to that agent, which sees nothing else of your work: make it complete and self-contained, with what you found or changed, and what is left undone and why.`

// Spawn creates a sub-agent's session under s and opens it.
func (s *Session) Spawn(ctx context.Context, o ChildOptions) (*Session, error) {
	level := s.Level()
	if o.Permission != nil && *o.Permission < level {
		level = *o.Permission
	}
	if !s.h.opts.Permissions.Offers(level) {
		return nil, fmt.Errorf("spawn sub-agent: %w: %s", ErrLevelNotEnabled, level)
	}
	prof := o.Profile
	if prof == "" {
		prof = s.profile.Name
	} else if _, err := s.h.opts.Profiles(prof); err != nil {
		// Refused before anything is stored: no session is left behind.
		return nil, fmt.Errorf("spawn sub-agent: %w", err)
	}
	meta := s.Meta()
	cwd, dirs := meta.Cwd, meta.AdditionalDirs
	var wt *worktree.Worktree
	switch o.Isolation {
	case "":
	case IsolationWorktree:
		w, err := s.h.isolate(ctx, meta.Cwd)
		if err != nil {
			return nil, fmt.Errorf("spawn sub-agent: %w", err)
		}
		wt, cwd, dirs = &w, w.Path, nil
	default:
		return nil, fmt.Errorf("spawn sub-agent: isolation %q: the one kind is %q", o.Isolation, IsolationWorktree)
	}
	// What was made for a child that never runs is taken down with it.
	fail := func(err error) (*Session, error) {
		if wt != nil {
			s.h.opts.Worktrees.Remove(context.WithoutCancel(ctx), wt.Repo, wt.Name, true, false)
		}
		return nil, fmt.Errorf("spawn sub-agent: %w", err)
	}
	m, err := s.h.opts.Store.Create(ctx, session.Meta{
		Title: session.Title(o.Title), Cwd: cwd, AdditionalDirs: dirs, Profile: prof,
		Project: meta.Project, Permission: level.String(),
		ParentID: s.id, ParentCallID: o.CallID, Agent: o.Agent,
	})
	if err != nil {
		return fail(err)
	}
	c, err := s.h.Open(ctx, m.ID)
	if err != nil {
		if wt != nil {
			s.h.opts.Store.Delete(context.WithoutCancel(ctx), m.ID)
		}
		return fail(err)
	}
	s.childOpened(c)
	return c, nil
}

// Child opens the sub-agent session id (or a unique prefix of it) of s.
func (s *Session) Child(ctx context.Context, id string) (*Session, error) {
	m, err := s.h.opts.Store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("open sub-agent: %w", err)
	}
	if m.ParentID != s.id {
		return nil, fmt.Errorf("open sub-agent %s: %w", m.ID, ErrNotChild)
	}
	if _, _, err := s.isolated(ctx, m.Cwd); err != nil {
		return nil, fmt.Errorf("open sub-agent %s: %w", m.ID, err)
	}
	c, err := s.h.Open(ctx, m.ID)
	if err != nil {
		return nil, err
	}
	s.childOpened(c)
	return c, nil
}

// Parent returns the session a sub-agent's session belongs to, nil for a
// top-level session.
func (s *Session) Parent() *Session { return s.parent }

// Depth is how many sub-agents deep s is: 0 for a top-level session.
func (s *Session) Depth() int { return s.depth }

// adopt makes s, being loaded, a sub-agent of the open session its meta
// names, and returns its definition.
func (h *Host) adopt(s *Session, meta session.Meta) (Definition, error) {
	h.mu.Lock()
	p, ok := h.open[meta.ParentID]
	h.mu.Unlock()
	if !ok {
		return Definition{}, ErrSubAgent
	}
	s.parent, s.depth = p, p.depth+1
	s.files.parent = &p.files
	s.gate.Parent = p.gate
	s.gate.Approvals = p.Approvals
	s.label = meta.Title
	if meta.Agent == "" {
		return Definition{}, nil
	}
	if h.opts.Definitions == nil {
		return Definition{}, fmt.Errorf("sub-agent definition %q: no definitions are configured", meta.Agent)
	}
	d, err := h.opts.Definitions(meta.Cwd, meta.Agent)
	if err != nil {
		return Definition{}, fmt.Errorf("sub-agent definition %q: %w", meta.Agent, err)
	}
	if s.label == "" {
		s.label = meta.Agent
	}
	return d, nil
}

// forward puts a sub-agent's approval request to whoever is attached to
// its parent, naming the innermost sub-agent.
func (s *Session) forward(ctx context.Context, req permission.Request) (permission.Decision, error) {
	if req.SubAgent == "" {
		req.SubAgent = s.label
		if req.SubAgent == "" {
			req.SubAgent = "sub-agent " + s.id[:8]
		}
		req.SpawnCallID = s.Meta().ParentCallID
	}
	return s.parent.ask(ctx, req)
}

// closeChildren closes the open sub-agent sessions of the session id,
// theirs first.
func (h *Host) closeChildren(ctx context.Context, id string) error {
	var errs []error
	for _, c := range h.Sessions() {
		if c.parent != nil && c.parent.id == id {
			errs = append(errs, h.CloseSession(ctx, c.id))
		}
	}
	return errors.Join(errs...)
}

// childSystem is the system prompt addition of a sub-agent's session.
func childSystem(d Definition) string {
	var b strings.Builder
	b.WriteString("\n\n")
	b.WriteString(childPrompt)
	if p := strings.TrimSpace(d.Prompt); p != "" {
		b.WriteString("\n\n")
		b.WriteString(p)
	}
	return b.String()
}

// Spawner returns s as the agent_* tools see it: the parent of the
// sub-agents they spawn.
func (s *Session) Spawner() subagent.Spawner { return spawner{s} }

type spawner struct{ s *Session }

var _ subagent.Spawner = spawner{}

func (p spawner) Spawn(ctx context.Context, o subagent.SpawnOptions) (subagent.Child, error) {
	c, err := p.s.Spawn(ctx, ChildOptions{CallID: o.CallID, Title: o.Title, Agent: o.Agent, Profile: o.Profile, Permission: o.Permission, Isolation: o.Isolation})
	if err != nil {
		return nil, err
	}
	return child{c}, nil
}

func (p spawner) Child(ctx context.Context, id string) (subagent.Child, error) {
	c, err := p.s.Child(ctx, id)
	if err != nil {
		return nil, err
	}
	return child{c}, nil
}

func (p spawner) Subscribe(fn func(agent.Event)) func() { return p.s.Subscribe(fn) }

// child is a sub-agent's session as the agent_* tools drive it.
type child struct{ *Session }

func (c child) Run(ctx context.Context, task string) (agent.Result, error) {
	msg := session.UserMessage{Parts: model.Parts{model.Text{Text: task}}}
	res, err := c.Session.Run(ctx, msg)
	if errors.Is(err, ErrClosed) && c.parent != nil {
		// Swept between its opening and its turn: taken up again, once.
		again, oerr := c.parent.Child(ctx, c.id)
		if oerr != nil {
			return res, err
		}
		return again.Run(ctx, msg)
	}
	return res, err
}

func (c child) Steer(text string) bool { return c.Session.Steer(model.Text{Text: text}) }
