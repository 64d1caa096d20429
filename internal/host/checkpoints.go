package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/checkpoint"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// CheckpointOptions turn on checkpoints of the files sessions' turns
// change inside their workspace ([checkpoints]).
type CheckpointOptions struct {
	// Dir is where they are kept (the data directory's checkpoints/).
	Dir string
	// MaxBytes bounds them, pruning the oldest; 0 means no bound.
	MaxBytes int64
	// MaxFileBytes skips larger files; 0 means checkpoint's default.
	MaxFileBytes int64
}

// checkpointGuard snapshots a session's workspace before the first call
// of a turn that may change files, and after each such call: whatever the
// call did (a file tool, a shell command, a background task started), the
// turn's changes lie between its first and last snapshots.
type checkpointGuard struct {
	store  *checkpoint.Store
	id     string
	logger *slog.Logger

	mu     sync.Mutex
	before int64 // the last turn snapshotted before its first change
}

// mutating says a call may change files: by what it is (a shell command
// declares the read level where confinement keeps it read-only at that
// level, yet writes at a higher one) or by the level it needs.
func mutating(info agent.ToolInfo) bool {
	if info.Spec.Bookkeeping {
		return false
	}
	switch info.Spec.Kind {
	case tool.KindEdit, tool.KindDelete, tool.KindMove, tool.KindExecute:
		return true
	}
	return info.Spec.Level >= permission.Workspace
}

func (g *checkpointGuard) BeforeTool(ctx context.Context, info agent.ToolInfo) agent.ToolVerdict {
	if !mutating(info) {
		return agent.ToolVerdict{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.before == info.Turn {
		return agent.ToolVerdict{}
	}
	if _, err := g.store.Snapshot(ctx, g.id, info.Turn, checkpoint.KindBefore); err != nil {
		// A call is not refused for a checkpoint it could not take; the
		// turn's files just cannot be rewound.
		g.logger.Warn("checkpoint before turn", "turn", info.Turn, "err", err)
		return agent.ToolVerdict{}
	}
	g.before = info.Turn
	return agent.ToolVerdict{}
}

func (g *checkpointGuard) AfterTool(ctx context.Context, info agent.ToolInfo, _ session.ToolResult) agent.AfterVerdict {
	if !mutating(info) {
		return agent.AfterVerdict{}
	}
	if _, err := g.store.Snapshot(ctx, g.id, info.Turn, checkpoint.KindAfter); err != nil {
		g.logger.Warn("checkpoint after call", "turn", info.Turn, "tool", info.Call.Name, "err", err)
	}
	return agent.AfterVerdict{}
}

// checkpointGuardFor opens the checkpoints of a session's roots, or
// returns nil when they are off.
func (h *Host) checkpointGuardFor(ctx context.Context, id string, roots []string) *checkpointGuard {
	c := h.opts.Checkpoints
	if c == nil {
		return nil
	}
	st, err := checkpoint.Open(ctx, checkpoint.Options{Dir: c.Dir, Roots: roots, MaxBytes: c.MaxBytes,
		MaxFileBytes: c.MaxFileBytes, Now: h.opts.Now})
	if err != nil {
		h.opts.Logger.Warn("checkpoints off for session", "session_id", id, "err", err)
		return nil
	}
	return &checkpointGuard{store: st, id: id, logger: h.opts.Logger, before: -1}
}

// The checkpoint package's answers, for front doors that do not import it.
type (
	// FileChange is one file a turn or a rewind changed.
	FileChange = checkpoint.Change
	// FilesChangedError refuses a code rewind: files changed outside meka
	// since its last checkpoint (Force overwrites them).
	FilesChangedError = checkpoint.ConflictError
	// CheckpointPrunedError refuses a code rewind past what pruning kept.
	CheckpointPrunedError = checkpoint.PrunedError
	// TurnChanges are the files one turn changed.
	TurnChanges = checkpoint.TurnChanges
)

// ErrTurnOutOfRange refuses a rewind to a turn the session does not have
// before its last.
var ErrTurnOutOfRange = errors.New("no such turn to keep")

// RewindOptions say what a rewind puts back.
type RewindOptions struct {
	// Code puts the workspace's files back as they were after the kept
	// turn; Conversation drops the later turns from the log.
	Code, Conversation bool
	// Force overwrites files changed outside meka since its last
	// checkpoint instead of refusing.
	Force bool
}

// RewindResult is what a rewind did.
type RewindResult struct {
	// Files are the files put back, removed or written again.
	Files []checkpoint.Change
	// Undo, when files changed, names the checkpoint of the state found:
	// UndoRewind with it undoes the code part.
	Undo int64
}

// ErrNoCheckpoints says a code rewind was asked where checkpoints are off.
var ErrNoCheckpoints = errors.New("checkpoints are off ([checkpoints] in the config)")

// RewindSession takes session id back to after turn keep (Rewind); a
// session open in this host is refused.
func (h *Host) RewindSession(ctx context.Context, id string, keep int64, o RewindOptions) (RewindResult, error) {
	h.mu.Lock()
	_, open := h.open[id]
	h.mu.Unlock()
	if open {
		return RewindResult{}, fmt.Errorf("rewind session %s: it is open here; close it first", id)
	}
	return Rewind(ctx, h.opts.Store, h.opts.Holder, h.opts.Checkpoints, id, keep, o)
}

// Rewind takes session id back to after turn keep: its files (Code), its
// log (Conversation), or both. Files go first, so that a refused code
// rewind (a file changed outside meka) leaves the log as it is. The
// session's lock is taken, so a session open elsewhere is refused. cp
// nil means checkpoints are off.
func Rewind(ctx context.Context, st session.Store, holder session.Holder, cp *CheckpointOptions, id string, keep int64, o RewindOptions) (RewindResult, error) {
	var res RewindResult
	if o.Code && cp == nil {
		return res, ErrNoCheckpoints
	}
	lock, err := st.Lock(ctx, id, holder)
	if err != nil {
		return res, fmt.Errorf("rewind session: %w", err)
	}
	defer lock.Release(context.WithoutCancel(ctx))
	tail, err := st.Tail(ctx, id, 1)
	if err != nil {
		return res, fmt.Errorf("rewind session: %w", err)
	}
	var last int64
	if len(tail) > 0 {
		last = tail[0].Turn
	}
	if keep < 0 || keep >= last {
		return res, fmt.Errorf("%w: turn %d: session %s has turns 1 to %d; a rewind keeps turns up to N < %d", ErrTurnOutOfRange, keep, id, last, last)
	}
	if o.Code {
		cs, err := checkpoint.Open(ctx, checkpoint.Options{Dir: cp.Dir, MaxBytes: cp.MaxBytes})
		if err != nil {
			return res, err
		}
		r, err := cs.Rewind(ctx, id, keep+1, checkpoint.RestoreOptions{Force: o.Force, Turn: last})
		if err != nil {
			return res, err
		}
		res.Files = r.Changes
		if len(r.Changes) > 0 {
			res.Undo = r.Undo.Seq
		}
	}
	if o.Conversation {
		if err := st.Rewind(ctx, id, keep); err != nil {
			return res, fmt.Errorf("rewind session: %w", err)
		}
	}
	return res, nil
}

// UndoRewind puts back the files a code rewind replaced (its Undo).
func (h *Host) UndoRewind(ctx context.Context, id string, undo int64, force bool) ([]checkpoint.Change, error) {
	return UndoRewind(ctx, h.opts.Checkpoints, id, undo, force)
}

// UndoRewind puts back the files a code rewind replaced (its Undo).
func UndoRewind(ctx context.Context, cp *CheckpointOptions, id string, undo int64, force bool) ([]checkpoint.Change, error) {
	if cp == nil {
		return nil, ErrNoCheckpoints
	}
	st, err := checkpoint.Open(ctx, checkpoint.Options{Dir: cp.Dir})
	if err != nil {
		return nil, err
	}
	r, err := st.RestorePoint(ctx, id, undo, checkpoint.RestoreOptions{Force: force})
	return r.Changes, err
}

// TurnFiles lists, per turn of session id that changed files, what it
// changed (for /rewind and the rewind commands' question).
func (h *Host) TurnFiles(ctx context.Context, id string) ([]checkpoint.TurnChanges, error) {
	return TurnFiles(ctx, h.opts.Checkpoints, id)
}

// TurnFiles lists, per turn of session id that changed files, what it
// changed; nil when checkpoints are off.
func TurnFiles(ctx context.Context, cp *CheckpointOptions, id string) ([]checkpoint.TurnChanges, error) {
	if cp == nil {
		return nil, nil
	}
	st, err := checkpoint.Open(ctx, checkpoint.Options{Dir: cp.Dir})
	if err != nil {
		return nil, err
	}
	return st.Turns(ctx, id)
}

// reset forgets the turn last snapshotted: after a rewind the turn's
// number comes again and its first change must be recorded again.
func (g *checkpointGuard) reset() {
	g.mu.Lock()
	g.before = -1
	g.mu.Unlock()
}

// RewindFiles puts the workspace's files back as they were after turn
// keep, leaving the log as it is; the session must be idle. The rewind is
// recorded: Undo names the checkpoint UndoRewind restores.
func (s *Session) RewindFiles(ctx context.Context, keep int64, force bool) (RewindResult, error) {
	if s.checkpoints == nil {
		return RewindResult{}, ErrNoCheckpoints
	}
	if s.Busy() {
		return RewindResult{}, agent.ErrBusy
	}
	last := session.LastTurn(s.engine.Rows())
	r, err := s.checkpoints.store.Rewind(ctx, s.id, keep+1, checkpoint.RestoreOptions{Force: force, Turn: last})
	if err != nil {
		return RewindResult{}, err
	}
	s.checkpoints.reset()
	res := RewindResult{Files: r.Changes}
	if len(r.Changes) > 0 {
		res.Undo = r.Undo.Seq
	}
	return res, nil
}

// TurnFiles lists what each of the session's turns changed in the files.
func (s *Session) TurnFiles(ctx context.Context) ([]TurnChanges, error) {
	if s.checkpoints == nil {
		return nil, ErrNoCheckpoints
	}
	return s.checkpoints.store.Turns(ctx, s.id)
}

// ExportFiles writes root's files as they were after turn keep of
// session id into dest: a fork that takes the files too.
func ExportFiles(ctx context.Context, cp *CheckpointOptions, id string, keep int64, root, dest string) error {
	if cp == nil {
		return ErrNoCheckpoints
	}
	st, err := checkpoint.Open(ctx, checkpoint.Options{Dir: cp.Dir})
	if err != nil {
		return err
	}
	return st.Export(ctx, id, keep, root, dest)
}

// ExportWorktree makes worktree name (branch meka/NAME) of the repository
// root is in and writes root's files as they were after turn keep of
// session id into it, at root's place in the repository: a fork that works
// on a branch of its own, whose differences from the commit it started
// from are uncommitted changes there. It returns the worktree and the
// directory the fork works in. A worktree it could not fill is removed.
func ExportWorktree(ctx context.Context, cp *CheckpointOptions, wts worktree.Options, id string, keep int64, root, name string) (worktree.Worktree, string, error) {
	if cp == nil {
		return worktree.Worktree{}, "", ErrNoCheckpoints
	}
	st, err := checkpoint.Open(ctx, checkpoint.Options{Dir: cp.Dir})
	if err != nil {
		return worktree.Worktree{}, "", err
	}
	w, err := wts.Create(ctx, root, name)
	if err != nil {
		return w, "", err
	}
	dest, err := w.Within(ctx, wts, root)
	if err == nil {
		err = clearExcept(dest, ".git")
	}
	if err == nil {
		err = st.Export(ctx, id, keep, root, dest)
	}
	if err != nil {
		wts.Remove(context.WithoutCancel(ctx), w.Repo, w.Name, true, false)
		return worktree.Worktree{}, "", err
	}
	return w, dest, nil
}

// clearExcept empties dir but for the entry keep.
func clearExcept(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
