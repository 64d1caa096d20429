// Package subagent gives a session the agent_spawn, agent_followup and
// agent_steer tools: delegation of a piece of work to a sub-agent, a child
// session with its own conversation, checklist and limits that runs on the
// same engine and whose final reply comes back as the tool's result. It
// also reads named sub-agent definitions (.meka/agents/NAME.md and the
// like).
//
// The tools work over a Spawner, which the host satisfies: the host owns
// child sessions (their level, approvals, files and lifetime); this
// package owns what the parent's model sees of them. It imports agent,
// tool, model and permission.
package subagent

import (
	"context"
	"log/slog"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Spawner creates and reopens the sub-agents of one parent session. It is
// safe for concurrent use.
type Spawner interface {
	// Spawn creates a sub-agent's session for the parent's call and opens
	// it.
	Spawn(ctx context.Context, o SpawnOptions) (Child, error)
	// Child opens the parent's sub-agent id; any other session is refused.
	Child(ctx context.Context, id string) (Child, error)
	// Subscribe calls fn with the parent's events, one at a time, until
	// the returned function is called.
	Subscribe(fn func(agent.Event)) (unsubscribe func())
}

// SpawnOptions describe a new sub-agent.
type SpawnOptions struct {
	// CallID is the parent's agent_spawn call.
	CallID string
	// Title is the label a person sees.
	Title string
	// Agent names its definition, "" for none.
	Agent   string
	Profile string
	// Permission is the level asked for; the sub-agent gets the lower of
	// it and the parent's.
	Permission *permission.Level
	// Isolation is "worktree" for a git worktree of its own, "" to share
	// the parent's workspace.
	Isolation string
}

// Isolated is a Child that may work in a git worktree of its own
// (isolation "worktree"). The tools settle it after each of its turns.
type Isolated interface {
	// Settle reports its worktree and removes it when it holds no
	// changes; ok is false for a child that shares its parent's
	// workspace.
	Settle(ctx context.Context) (r WorktreeReport, ok bool, err error)
}

// WorktreeReport is what the parent is told of a sub-agent's worktree.
type WorktreeReport struct {
	Path   string `json:"path"`
	Branch string `json:"branch,omitempty"`
	// Kept is false when the worktree held no changes and was removed
	// with its branch.
	Kept        bool `json:"kept"`
	Commits     int  `json:"commits,omitempty"`
	Uncommitted bool `json:"uncommitted,omitempty"`
	// DiffStat is git's diff --stat from where it started to its files
	// as they are.
	DiffStat   string `json:"diff_stat,omitempty"`
	Files      int    `json:"files_changed,omitempty"`
	Insertions int    `json:"insertions,omitempty"`
	Deletions  int    `json:"deletions,omitempty"`
}

// Child is one sub-agent's session.
type Child interface {
	ID() string
	// Run runs a turn of the sub-agent with task as its input.
	Run(ctx context.Context, task string) (agent.Result, error)
	// Subscribe calls fn with the sub-agent's events until the returned
	// function is called.
	Subscribe(fn func(agent.Event)) (unsubscribe func())
	// Steer queues text for the running turn; false when none runs.
	Steer(text string) bool
}

// Options configure the agent_* tools of one parent session.
type Options struct {
	Spawner Spawner
	// Definitions are the named sub-agents agent_spawn offers, listed in
	// its description.
	Definitions []Definition
	// MaxParallel bounds the sub-agents of the session running at once
	// (default 4); more wait their turn.
	MaxParallel int
	// ScratchDir is the parent's scratchpad, where a long report goes
	// whole.
	ScratchDir string
	Now        func() time.Time
	Logger     *slog.Logger
}

// DefaultMaxParallel is the default of Options.MaxParallel.
const DefaultMaxParallel = 4

// Tools returns agent_spawn, agent_followup and agent_steer over
// opts.Spawner.
func Tools(opts Options) []tool.Tool {
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	set := &set{opts: opts, slots: make(chan struct{}, opts.MaxParallel), pending: make(map[string]*pendingRun)}
	opts.Spawner.Subscribe(set.observe)
	return []tool.Tool{&spawnTool{set}, &followupTool{set}, &steerTool{set}}
}
