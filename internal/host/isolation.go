package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/session"
)

// A sub-agent spawned with isolation "worktree" works in a git worktree of
// its own, made from the parent's workspace (its HEAD: uncommitted changes
// stay behind) on a branch meka/agent-XXXX. Its session's cwd is the
// worktree and it records no additional directories, so its confinement
// roots are the worktree, not the parent's workspace (the host's own
// AdditionalDirs, --add-dir, still apply to every session). After each of
// its turns the worktree is settled by worktree.Settle's rule: kept when it
// has changes (commits or uncommitted files), removed with its branch when
// it has none. A followup of a sub-agent whose worktree was removed makes
// it again at the same path, from the parent's HEAD then.

// IsolationWorktree is ChildOptions.Isolation for a worktree of its own.
const IsolationWorktree = "worktree"

// ErrNoWorktrees refuses isolation on a host without Options.Worktrees.
var ErrNoWorktrees = errors.New("this meka makes no worktrees")

// worktreePrefix names sub-agents' worktrees.
const worktreePrefix = "agent-"

// isolate makes a worktree for a sub-agent of a session in cwd.
func (h *Host) isolate(ctx context.Context, cwd string) (worktree.Worktree, error) {
	if h.opts.Worktrees == nil {
		return worktree.Worktree{}, fmt.Errorf("isolation %q: %w", IsolationWorktree, ErrNoWorktrees)
	}
	var b [6]byte
	rand.Read(b[:])
	w, err := h.opts.Worktrees.Create(ctx, cwd, worktreePrefix+hex.EncodeToString(b[:]))
	if errors.Is(err, worktree.ErrNotRepository) {
		return w, fmt.Errorf("isolation %q needs a git repository, and the workspace %s is in none: leave isolation out to work in the workspace itself: %w", IsolationWorktree, cwd, err)
	}
	if err != nil {
		return w, fmt.Errorf("isolation %q: %w", IsolationWorktree, err)
	}
	if w.Path, err = Canonical(w.Path); err != nil {
		return w, err
	}
	return w, nil
}

// isolated returns the worktree of the sub-agent session c of s when it
// has one of its own, making it again if it was removed; ok is false for
// a sub-agent that works in its parent's workspace.
func (s *Session) isolated(ctx context.Context, childCwd string) (w worktree.Worktree, ok bool, err error) {
	o := s.h.opts.Worktrees
	if o == nil || childCwd == s.Meta().Cwd || !strings.HasPrefix(filepath.Base(childCwd), worktreePrefix) {
		return w, false, nil
	}
	dir, err := Canonical(o.Dir)
	if err != nil || !sandbox.Within(childCwd, dir) {
		return w, false, nil
	}
	if _, err := os.Stat(childCwd); os.IsNotExist(err) {
		// Removed after a turn that changed nothing: made again where the
		// session expects it.
		again, err := o.Create(ctx, s.Meta().Cwd, filepath.Base(childCwd))
		if err != nil {
			return w, true, fmt.Errorf("make the sub-agent's worktree again: %w", err)
		}
		if c, _ := Canonical(again.Path); c != childCwd {
			o.Remove(ctx, again.Repo, again.Name, true, false)
			return w, true, fmt.Errorf("make the sub-agent's worktree again: the workspace %s is another repository than its worktree %s's", s.Meta().Cwd, childCwd)
		}
	}
	w, err = o.Open(ctx, childCwd)
	return w, true, err
}

// Settle reports the worktree of an isolated sub-agent after its turn and
// removes it when it holds no changes; ok is false for a sub-agent
// without a worktree of its own.
func (c child) Settle(ctx context.Context) (subagent.WorktreeReport, bool, error) {
	if c.parent == nil {
		return subagent.WorktreeReport{}, false, nil
	}
	cwd := c.Meta().Cwd
	if _, err := os.Stat(cwd); os.IsNotExist(err) {
		return subagent.WorktreeReport{}, false, nil
	}
	w, ok, err := c.parent.isolated(ctx, cwd)
	if !ok || err != nil {
		return subagent.WorktreeReport{Path: cwd}, ok, err
	}
	ch, kept, err := c.h.opts.Worktrees.Settle(ctx, w)
	r := subagent.WorktreeReport{Path: w.Path, Branch: w.Branch, Kept: kept, Commits: ch.Commits, Uncommitted: ch.Uncommitted,
		DiffStat: ch.Stat, Files: ch.Files, Insertions: ch.Insertions, Deletions: ch.Deletions}
	return r, true, err
}

var _ subagent.Isolated = child{}

// RunInWorktree runs msg as the turn of a new sub-agent session of s that
// works in a fresh worktree of s's workspace (isolation "worktree"), then
// settles the worktree by the same rule: what a scheduled job with
// isolation "worktree" fires. c is nil when the sub-agent could not be
// made (no repository, no worktrees here); wt.Path is empty when the
// worktree could not be settled.
func (s *Session) RunInWorktree(ctx context.Context, msg session.UserMessage, title string) (c *Session, res agent.Result, wt subagent.WorktreeReport, err error) {
	c, err = s.Spawn(ctx, ChildOptions{Title: title, Isolation: IsolationWorktree})
	if err != nil {
		return nil, res, wt, err
	}
	res, err = c.Run(ctx, msg)
	r, ok, serr := child{c}.Settle(context.WithoutCancel(ctx))
	if serr != nil || !ok {
		s.h.opts.Logger.Warn("settle a scheduled turn's worktree", "session_id", c.id, "err", serr)
		return c, res, subagent.WorktreeReport{}, err
	}
	return c, res, r, err
}
