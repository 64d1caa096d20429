// Package worktree gives sessions and sub-agents their own git worktree:
// a branch meka/NAME checked out in a directory of its own, so parallel
// agents do not edit the same files. Worktrees live under a directory
// meka owns (the data directory's worktrees/); git's own bookkeeping
// (git worktree prune) clears what a killed meka left behind.
package worktree

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// BranchPrefix names the branches meka creates.
const BranchPrefix = "meka/"

// Options say where worktrees go.
type Options struct {
	// Dir holds the worktrees, one directory per repository.
	Dir string
	// Git is the git program; "" means "git".
	Git string
}

// Worktree is one of meka's worktrees.
type Worktree struct {
	Name   string
	Path   string
	Branch string
	// Repo is the repository's top-level directory.
	Repo string
	// Locked says git holds it locked (a worktree a live meka uses).
	Locked bool
	// Base is the commit it started from, what Changes compares with.
	Base string
}

// validName reports whether name is a letter or digit followed by at
// most 63 letters, digits, '.', '_' and '-'. Not a regexp: the bounded
// repetition compiled into a program of 64 copies at every meka's start,
// a third of the instructions an ACP handshake and session/new take.
func validName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// Errors of worktrees, to be tested with errors.Is.
var (
	// ErrExists refuses a name already in use.
	ErrExists = errors.New("worktree exists")
	// ErrNotRepository refuses a directory in no git repository.
	ErrNotRepository = errors.New("not in a git repository")
)

// RunGit runs git in dir and returns its stdout without its last
// newlines (leading spaces are meaningful in --stat and --porcelain). A
// variable that points git at another repository (a hook's GIT_DIR) is
// dropped, so each command acts on dir's. A failure is a *GitError.
func (o Options) RunGit(ctx context.Context, dir string, args ...string) (string, error) {
	return o.gitEnv(ctx, dir, nil, args...)
}

// gitEnv is RunGit with extra environment variables set.
func (o Options) gitEnv(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	g := o.Git
	if g == "" {
		g = "git"
	}
	cmd := exec.CommandContext(ctx, g, args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_DIR=") && !strings.HasPrefix(kv, "GIT_WORK_TREE=") && !strings.HasPrefix(kv, "GIT_INDEX_FILE=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String()) // merge reports conflicts on stdout
		}
		return "", &GitError{Args: args, Err: err, Stderr: msg}
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// GitError is a git command that failed.
type GitError struct {
	Args []string
	Err  error
	// Stderr is what git said, or its stdout when it said nothing on
	// stderr.
	Stderr string
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Stderr)
}
func (e *GitError) Unwrap() error { return e.Err }

// Top is the main working tree of the repository dir is in, from any of
// its worktrees.
func (o Options) Top(ctx context.Context, dir string) (string, error) {
	common, err := o.RunGit(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("worktree: %s is %w", dir, ErrNotRepository)
		}
		return "", fmt.Errorf("worktree: %w", err)
	}
	if filepath.Base(common) != ".git" {
		return "", fmt.Errorf("worktree: %s is in a bare repository", dir)
	}
	return filepath.Dir(common), nil
}

func (o Options) base(top string) string {
	sum := sha256.Sum256([]byte(top))
	return filepath.Join(o.Dir, filepath.Base(top)+"-"+hex.EncodeToString(sum[:4]))
}

// Create makes worktree name of the repository dir is in, on a new branch
// meka/name from dir's HEAD (the commit checked out where dir is: the
// main checkout's, or another worktree's), and prunes what killed
// processes left first. It is not locked: a lock would outlive a killed
// meka, and a worktree whose directory exists is never pruned anyway.
// Uncommitted changes in dir are not carried over.
func (o Options) Create(ctx context.Context, dir, name string) (Worktree, error) {
	if !validName(name) {
		return Worktree{}, fmt.Errorf("worktree: name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	top, err := o.Top(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	if _, err := o.RunGit(ctx, top, "worktree", "prune"); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	// What a killed meka left locked in its other worktrees is cleared.
	if _, err := o.List(ctx, top); err != nil {
		return Worktree{}, err
	}
	path := filepath.Join(o.base(top), name)
	if _, err := os.Stat(path); err == nil {
		return Worktree{}, fmt.Errorf("worktree: %w: %s (meka worktrees remove %s)", ErrExists, path, name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	head, err := o.RunGit(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}")
	if err != nil {
		return Worktree{}, fmt.Errorf("worktree: the repository of %s has no commit yet: commit once, then a worktree can start from it", dir)
	}
	branch := BranchPrefix + name
	base := head
	args := []string{"worktree", "add", "-b", branch, path, head}
	if _, err := o.RunGit(ctx, top, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		// The branch of a worktree removed with --keep-branch, or lost
		// with its directory: its work is taken up again, not reset.
		args = []string{"worktree", "add", path, branch}
		if mb, err := o.RunGit(ctx, top, "merge-base", head, branch); err == nil {
			base = mb
		}
	}
	if _, err := o.RunGit(ctx, top, args...); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	w := Worktree{Name: name, Path: path, Branch: branch, Repo: top, Base: base}
	// The base goes in the worktree's own administrative directory, which
	// git deletes with it, so that a later process (a restarted meka)
	// compares with the same commit.
	if admin, err := o.RunGit(ctx, path, "rev-parse", "--absolute-git-dir"); err == nil {
		_ = os.WriteFile(filepath.Join(admin, baseFile), []byte(base+"\n"), 0o600)
	}
	return w, nil
}

// baseFile, in a worktree's administrative directory, records its base.
const baseFile = "meka-base"

// Open returns meka's worktree at path (a Worktree's Path), its base read
// back from where Create recorded it.
func (o Options) Open(ctx context.Context, path string) (Worktree, error) {
	wts, err := o.List(ctx, path)
	if err != nil {
		return Worktree{}, err
	}
	want := resolved(path)
	for _, w := range wts {
		if resolved(w.Path) != want {
			continue
		}
		if admin, err := o.RunGit(ctx, path, "rev-parse", "--absolute-git-dir"); err == nil {
			if b, err := os.ReadFile(filepath.Join(admin, baseFile)); err == nil {
				w.Base = strings.TrimSpace(string(b))
			}
		}
		if w.Base == "" {
			// Not made by this version: the fork point from the main
			// checkout is the best guess.
			if mb, err := o.RunGit(ctx, w.Repo, "merge-base", "HEAD", w.Branch); err == nil {
				w.Base = mb
			}
		}
		return w, nil
	}
	return Worktree{}, fmt.Errorf("worktree: %s is not one of meka's worktrees (meka worktrees list)", path)
}

// List lists meka's worktrees of the repository dir is in, and clears
// the lock files a killed git left in them (locks.go).
func (o Options) List(ctx context.Context, dir string) ([]Worktree, error) {
	top, err := o.Top(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := o.RunGit(ctx, top, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	base := o.base(top) + string(filepath.Separator)
	var wts []Worktree
	for _, block := range strings.Split(out, "\n\n") {
		var w Worktree
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, " ")
			switch k {
			case "worktree":
				w.Path = v
			case "branch":
				w.Branch = strings.TrimPrefix(v, "refs/heads/")
			case "locked":
				w.Locked = true
			}
		}
		if strings.HasPrefix(w.Path, base) {
			w.Name, w.Repo = filepath.Base(w.Path), top
			wts = append(wts, w)
		}
	}
	for _, w := range wts {
		o.clearLocks(ctx, w)
	}
	return wts, nil
}

// Remove deletes worktree name of the repository dir is in, and its
// branch unless keepBranch. Uncommitted changes refuse it unless force.
func (o Options) Remove(ctx context.Context, dir, name string, force, keepBranch bool) error {
	wts, err := o.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, w := range wts {
		if w.Name != name {
			continue
		}
		if w.Locked {
			o.RunGit(ctx, w.Repo, "worktree", "unlock", w.Path)
		}
		args := []string{"worktree", "remove", w.Path}
		if force {
			args = []string{"worktree", "remove", "--force", w.Path}
		}
		if _, err := o.RunGit(ctx, w.Repo, args...); err != nil {
			return fmt.Errorf("worktree %s: %w (--force removes it with its changes)", name, err)
		}
		if !keepBranch && strings.HasPrefix(w.Branch, BranchPrefix) {
			if _, err := o.RunGit(ctx, w.Repo, "branch", "-D", w.Branch); err != nil {
				return fmt.Errorf("worktree %s: %w", name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("worktree: no worktree %s of %s (meka worktrees list)", name, dir)
}

// Prune clears git's records of worktrees whose directories are gone,
// such as those a killed meka was creating.
func (o Options) Prune(ctx context.Context, dir string) error {
	top, err := o.Top(ctx, dir)
	if err != nil {
		return err
	}
	_, err = o.RunGit(ctx, top, "worktree", "prune")
	return err
}

// resolved is p with its symbolic links followed, or p cleaned when it
// cannot be.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Changes are what a worktree holds beyond its base.
type Changes struct {
	// Commits is how many commits its HEAD is ahead of the base.
	Commits int
	// Uncommitted says its files differ from its HEAD: modified, deleted
	// or untracked files (ignored ones do not count).
	Uncommitted bool
	// Stat is git's diff --stat from the base to the files as they are,
	// committed or not, untracked files included; "" when they are the
	// same.
	Stat string
	// Files, Insertions and Deletions sum Stat up.
	Files, Insertions, Deletions int
}

// Empty says the worktree holds nothing its base does not.
func (c Changes) Empty() bool { return c.Commits == 0 && !c.Uncommitted }

// Changes reports what w holds beyond its base. The worktree's own index
// is not touched: untracked files are staged in a copy of it.
func (o Options) Changes(ctx context.Context, w Worktree) (Changes, error) {
	var c Changes
	status, err := o.RunGit(ctx, w.Path, "status", "--porcelain")
	if err != nil {
		return c, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	c.Uncommitted = status != ""
	base := w.Base
	if base == "" {
		base = "HEAD"
	}
	n, err := o.RunGit(ctx, w.Path, "rev-list", "--count", base+"..HEAD")
	if err != nil {
		return c, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	c.Commits, _ = strconv.Atoi(n)
	tree := "HEAD"
	if c.Uncommitted {
		if tree, err = o.snapshot(ctx, w); err != nil {
			return c, fmt.Errorf("worktree %s: %w", w.Name, err)
		}
	}
	if c.Stat, err = o.RunGit(ctx, w.Path, "diff", "--stat=100", base, tree); err != nil {
		return c, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	num, err := o.RunGit(ctx, w.Path, "diff", "--numstat", base, tree)
	if err != nil {
		return c, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	for line := range strings.SplitSeq(num, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		c.Files++
		a, _ := strconv.Atoi(f[0]) // "-" for a binary file
		d, _ := strconv.Atoi(f[1])
		c.Insertions += a
		c.Deletions += d
	}
	return c, nil
}

// snapshot writes the tree of w's files as they are, untracked ones
// included, through a copy of its index.
func (o Options) snapshot(ctx context.Context, w Worktree) (string, error) {
	index, err := o.RunGit(ctx, w.Path, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(index), "meka-index-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	// A copy keeps the index's stat data, so only changed files are
	// hashed again.
	if b, err := os.ReadFile(index); err == nil {
		_, err = tmp.Write(b)
		if cerr := tmp.Close(); err != nil || cerr != nil {
			return "", errors.Join(err, cerr)
		}
	} else {
		tmp.Close()
		os.Remove(tmp.Name()) // git makes a missing index afresh
	}
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := o.gitEnv(ctx, w.Path, env, "add", "-A"); err != nil {
		return "", err
	}
	return o.gitEnv(ctx, w.Path, env, "write-tree")
}

// Settle applies the rule for a worktree whose work is over: one with
// changes (Changes.Empty is false) is kept for a person to review, merge
// or remove; one with none is removed with its branch. Ignored files,
// such as build output, are not changes and go with it.
func (o Options) Settle(ctx context.Context, w Worktree) (c Changes, kept bool, err error) {
	if c, err = o.Changes(ctx, w); err != nil {
		return c, true, err
	}
	if !c.Empty() {
		return c, true, nil
	}
	if err := o.Remove(ctx, w.Repo, w.Name, true, false); err != nil {
		return c, true, err
	}
	return c, false, nil
}

// Within returns the directory of w that stands where dir (a directory of
// the same repository, in its main checkout or another worktree) stands
// in its own checkout, made if missing.
func (w Worktree) Within(ctx context.Context, o Options, dir string) (string, error) {
	top, err := o.RunGit(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	rel, err := filepath.Rel(resolved(top), resolved(dir))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("worktree: %s is outside its checkout %s", dir, top)
	}
	d := filepath.Join(w.Path, rel)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("worktree: %w", err)
	}
	return d, nil
}

// CanCreate reports why Create could not make a worktree of dir's
// repository (none, or no commit yet), nil when it could.
func (o Options) CanCreate(ctx context.Context, dir string) error {
	if _, err := o.Top(ctx, dir); err != nil {
		return err
	}
	if _, err := o.RunGit(ctx, dir, "rev-parse", "--verify", "-q", "HEAD^{commit}"); err != nil {
		return fmt.Errorf("worktree: the repository of %s has no commit yet", dir)
	}
	return nil
}
