// Package bestof runs one task N times at once, each run a session of its
// own in a git worktree of its own (best-of-ID-K, branch
// meka/best-of-ID-K), then reports what each candidate changed, which
// tests it ran and what it said, and merges the one a person keeps into
// the current branch, removing the others.
//
// It does not run turns itself: the composition root passes a Runner
// that creates and runs a session, and the session store to read its
// log. It imports internal/worktree, session and model only.
package bestof

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/session"
)

// MaxN bounds how many candidates run at once: each is a model stream
// and a workspace of commands on the same machine.
const MaxN = 8

// Outcome is how a candidate's turn ended.
type Outcome struct {
	// SessionID is the session the runner created, set whenever it
	// created one, even if the turn then failed.
	SessionID string
	// Stopped says why a turn that did not fail still stopped short (a
	// limit, a refusal); "" for a normal end.
	Stopped string
	// Err is why the turn failed (the model's error): the candidate is
	// reported failed and cannot be picked.
	Err error
}

// Runner runs task as one turn of a new session whose directory is dir
// (the candidate's worktree). It is called from N goroutines at once.
type Runner func(ctx context.Context, dir, task string) Outcome

// Log reads a session's rows; a session.Store is one.
type Log interface {
	Rows(ctx context.Context, sessionID string, from int64) ([]session.Row, error)
}

// Options configure a best-of run. Worktrees, Runner and Log are
// required.
type Options struct {
	Worktrees worktree.Options
	Runner    Runner
	Log       Log
	// Progress receives a line as each candidate starts and finishes;
	// nil means none.
	Progress io.Writer
	// NewID names a run; nil means six random hex digits.
	NewID func() string
}

// Candidate statuses.
const (
	StatusOK      = "ok"      // the turn ended normally
	StatusStopped = "stopped" // the turn stopped short (Error says why); its work may still be picked
	StatusFailed  = "failed"  // the turn failed (Error says why)
)

// Candidate is one of the N runs.
type Candidate struct {
	// ID numbers the candidate from 1.
	ID        int    `json:"id"`
	SessionID string `json:"session_id"`
	Worktree  string `json:"worktree"`
	Path      string `json:"path"`
	Branch    string `json:"branch"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	// Commit is the branch's head after the run; it equals the run's base
	// when the candidate changed nothing.
	Commit   string     `json:"commit"`
	DiffStat string     `json:"diff_stat"`
	Files    []FileStat `json:"files"`
	Tests    []TestRun  `json:"tests"`
	Summary  string     `json:"summary"`
}

// Changed reports whether the candidate changed any file.
func (c Candidate) Changed() bool { return len(c.Files) > 0 }

// Result is a best-of run: the candidates, then what was kept.
type Result struct {
	ID   string `json:"id"`
	Task string `json:"task"`
	// Dir is where meka was started: the picked candidate merges into its
	// current branch.
	Dir string `json:"dir"`
	// Branch is that branch, "" when HEAD is detached; Base the commit
	// every candidate started from.
	Branch     string      `json:"branch"`
	Base       string      `json:"base"`
	Candidates []Candidate `json:"candidates"`
	// Picked is the candidate kept (0 for none), Merge how it was brought
	// in ("merge" or "cherry-pick") and MergedHead the branch's head after.
	Picked     int    `json:"picked"`
	Merge      string `json:"merge,omitempty"`
	MergedHead string `json:"merged_head,omitempty"`
	// Removed are the worktrees removed with their branches.
	Removed []string `json:"removed"`
}

// AllFailed reports whether no candidate can be picked.
func (r *Result) AllFailed() bool {
	for _, c := range r.Candidates {
		if c.Status != StatusFailed {
			return false
		}
	}
	return true
}

// Candidate returns candidate k, from 1.
func (r *Result) Candidate(k int) (*Candidate, bool) {
	if k < 1 || k > len(r.Candidates) {
		return nil, false
	}
	return &r.Candidates[k-1], true
}

// ErrRefused is a repository best-of cannot run in; the error says what
// to do.
var ErrRefused = errors.New("best-of refused")

// refusal says what to do in its own words, and is ErrRefused.
type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refuse(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// CheckN refuses a candidate count outside 2..MaxN.
func CheckN(n int) error {
	switch {
	case n < 2:
		return refuse("best-of needs at least 2 candidates (one is meka -w NAME)")
	case n > MaxN:
		return refuse("best-of runs at most %d candidates at once, not %d", MaxN, n)
	}
	return nil
}

// Check refuses a directory best-of cannot run in: outside a git
// repository, with no commit, with uncommitted changes to tracked files
// (the candidates would not see them, and the merge would meet them), or
// without a git identity to commit the candidates' work with. It returns
// the current branch ("" when detached) and the base commit.
func (o Options) Check(ctx context.Context, dir string) (branch, base string, err error) {
	if _, err := o.Worktrees.Top(ctx, dir); err != nil {
		return "", "", refuse("%s is not in a git repository; run meka best-of inside one (git init, and a first commit)", dir)
	}
	base, err = o.git(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return "", "", refuse("the repository has no commit yet: commit something first, the candidates start from HEAD")
	}
	if st, err := o.git(ctx, dir, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return "", "", err
	} else if st != "" {
		return "", "", refuse("the working tree has uncommitted changes; the candidates start from HEAD without them and the merge would meet them: commit or stash them first (git stash), then run meka best-of again\n%s", st)
	}
	if _, err := o.git(ctx, dir, "var", "GIT_COMMITTER_IDENT"); err != nil {
		return "", "", refuse("git has no identity to commit the candidates' work with: git config user.name \"...\" and git config user.email \"...\"")
	}
	branch, _ = o.git(ctx, dir, "symbolic-ref", "-q", "--short", "HEAD")
	return branch, base, nil
}

// Run runs task as n candidates at once, each in worktree best-of-ID-K of
// the repository dir is in, waits for all of them, commits what each left
// uncommitted on its branch, and reads each one's diff, tests and summary.
// A candidate's failure, or one to commit or read its work, is recorded
// in the result; the error is for a run that could not start (Check's refusals, a worktree git would not
// create), with the worktrees made so far removed.
func Run(ctx context.Context, o Options, dir, task string, n int) (*Result, error) {
	if err := CheckN(n); err != nil {
		return nil, err
	}
	if strings.TrimSpace(task) == "" {
		return nil, refuse("best-of needs a task: meka best-of %d \"what to do\"", n)
	}
	branch, base, err := o.Check(ctx, dir)
	if err != nil {
		return nil, err
	}
	id := newID()
	if o.NewID != nil {
		id = o.NewID()
	}
	res := &Result{ID: id, Task: task, Dir: dir, Branch: branch, Base: base, Removed: []string{}}
	// One at a time: git worktree add takes the repository's locks.
	for k := 1; k <= n; k++ {
		w, err := o.Worktrees.Create(ctx, dir, fmt.Sprintf("best-of-%s-%d", id, k))
		if err != nil {
			for _, c := range res.Candidates {
				_ = o.Worktrees.Remove(context.WithoutCancel(ctx), dir, c.Worktree, true, false)
			}
			return nil, err
		}
		res.Candidates = append(res.Candidates, Candidate{ID: k, Worktree: w.Name, Path: w.Path, Branch: w.Branch,
			Files: []FileStat{}, Tests: []TestRun{}})
	}

	// Bounded by n, which CheckN bounds; each goroutine writes its own
	// slot and all are waited for.
	outcomes := make([]Outcome, n)
	var wg sync.WaitGroup
	var progressMu sync.Mutex // guards o.Progress
	say := func(format string, args ...any) {
		if o.Progress == nil {
			return
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
	for i := range res.Candidates {
		c := &res.Candidates[i]
		say("best-of: candidate %d starts in worktree %s", c.ID, c.Worktree)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := o.Runner(ctx, c.Path, task)
			outcomes[i] = out
			switch {
			case out.Err != nil:
				say("best-of: candidate %d failed: %v", c.ID, out.Err)
			case out.Stopped != "":
				say("best-of: candidate %d stopped: %s", c.ID, out.Stopped)
			default:
				say("best-of: candidate %d done", c.ID)
			}
		}()
	}
	wg.Wait()

	// Committing and reading the results survive a cancelled run: the
	// work done so far is kept on the branches.
	ctx = context.WithoutCancel(ctx)
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if err := o.collect(ctx, res, c, outcomes[i]); err != nil {
			// What the agent left (a rebase under way, a lock) is this
			// candidate's problem, not the run's.
			c.Status, c.Error = StatusFailed, err.Error()
		}
	}
	return res, nil
}

// collect fills in candidate c from its outcome, its branch and its log.
func (o Options) collect(ctx context.Context, res *Result, c *Candidate, out Outcome) error {
	c.SessionID = out.SessionID
	switch {
	case out.Err != nil:
		c.Status, c.Error = StatusFailed, out.Err.Error()
	case out.Stopped != "":
		c.Status, c.Error = StatusStopped, out.Stopped
	default:
		c.Status = StatusOK
	}
	msg := fmt.Sprintf("meka best-of %s: candidate %d\n\n%s", res.ID, c.ID, firstLine(res.Task))
	if c.SessionID != "" {
		msg += "\n\nSession: " + c.SessionID
	}
	if _, err := o.commitAll(ctx, c.Path, msg); err != nil {
		return fmt.Errorf("best-of: candidate %d: commit its work: %w", c.ID, err)
	}
	head, err := o.git(ctx, c.Path, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("best-of: candidate %d: %w", c.ID, err)
	}
	c.Commit = head
	if c.DiffStat, c.Files, err = o.diffStat(ctx, c.Path, res.Base, head); err != nil {
		return fmt.Errorf("best-of: candidate %d: %w", c.ID, err)
	}
	if c.Files == nil {
		c.Files = []FileStat{}
	}
	if c.SessionID != "" && o.Log != nil {
		rows, err := o.Log.Rows(ctx, c.SessionID, 0)
		if err != nil {
			return fmt.Errorf("best-of: candidate %d: read session %s: %w", c.ID, c.SessionID, err)
		}
		if c.Tests = testRuns(rows); c.Tests == nil {
			c.Tests = []TestRun{}
		}
		c.Summary = summary(rows)
	}
	return nil
}

// Diff is candidate k's whole diff from the run's base.
func Diff(ctx context.Context, o Options, res *Result, k int) (string, error) {
	c, ok := res.Candidate(k)
	if !ok {
		return "", fmt.Errorf("best-of: no candidate %d (1-%d)", k, len(res.Candidates))
	}
	return o.git(ctx, res.Dir, "diff", res.Base, c.Commit, "--")
}

// Merge modes.
const (
	ModeMerge      = "merge"       // git merge --no-ff of the candidate's branch
	ModeCherryPick = "cherry-pick" // its commits replayed onto the current branch
)

// Pick brings candidate k's work into the current branch of res.Dir: a
// merge commit (ModeMerge) or its commits replayed (ModeCherryPick). A
// failed merge is aborted, leaving the branch as it was.
func Pick(ctx context.Context, o Options, res *Result, k int, mode string) error {
	c, ok := res.Candidate(k)
	if !ok {
		return fmt.Errorf("best-of: no candidate %d (1-%d)", k, len(res.Candidates))
	}
	switch {
	case c.Status == StatusFailed:
		return fmt.Errorf("best-of: candidate %d failed (%s); pick another", k, c.Error)
	case !c.Changed():
		return fmt.Errorf("best-of: candidate %d changed nothing; there is nothing to merge", k)
	}
	switch mode {
	case "", ModeMerge:
		mode = ModeMerge
		msg := fmt.Sprintf("meka best-of %s: merge candidate %d\n\n%s", res.ID, k, firstLine(res.Task))
		if _, err := o.git(ctx, res.Dir, "merge", "--no-ff", "--no-edit", "-m", msg, c.Branch); err != nil {
			_, _ = o.git(context.WithoutCancel(ctx), res.Dir, "merge", "--abort")
			return fmt.Errorf("best-of: merge candidate %d (aborted; the branch is as it was): %w", k, err)
		}
	case ModeCherryPick:
		if _, err := o.git(ctx, res.Dir, "cherry-pick", res.Base+".."+c.Commit); err != nil {
			_, _ = o.git(context.WithoutCancel(ctx), res.Dir, "cherry-pick", "--abort")
			return fmt.Errorf("best-of: cherry-pick candidate %d (aborted; the branch is as it was): %w", k, err)
		}
	default:
		return fmt.Errorf("best-of: mode %q: use %s or %s", mode, ModeMerge, ModeCherryPick)
	}
	head, err := o.git(ctx, res.Dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	res.Picked, res.Merge, res.MergedHead = k, mode, head
	return nil
}

// Clean removes the worktrees and branches of every candidate but keep
// (0 keeps none), recording them in res.Removed. It goes on past a
// failure and returns the first.
func Clean(ctx context.Context, o Options, res *Result, keep int) error {
	return o.clean(ctx, res, func(c Candidate) bool { return c.ID != keep })
}

// CleanUnchanged removes the candidates that changed nothing: what is
// left when every candidate failed.
func CleanUnchanged(ctx context.Context, o Options, res *Result) error {
	return o.clean(ctx, res, func(c Candidate) bool { return !c.Changed() })
}

func (o Options) clean(ctx context.Context, res *Result, remove func(Candidate) bool) error {
	var first error
	for _, c := range res.Candidates {
		if !remove(c) {
			continue
		}
		// Forced: the work is committed on its branch, and what is left
		// (ignored files, build output) goes with the worktree.
		if err := o.Worktrees.Remove(ctx, res.Dir, c.Worktree, true, false); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		res.Removed = append(res.Removed, c.Worktree)
	}
	return first
}

func newID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 72 {
		s = string(r[:69]) + "..."
	}
	return s
}
