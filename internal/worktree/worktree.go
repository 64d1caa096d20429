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
	"regexp"
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
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrExists refuses a name already in use.
var ErrExists = errors.New("worktree exists")

func (o Options) git(ctx context.Context, dir string, args ...string) (string, error) {
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
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Top is the main working tree of the repository dir is in, from any of
// its worktrees.
func (o Options) Top(ctx context.Context, dir string) (string, error) {
	common, err := o.git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("worktree: %s is not in a git repository: %w", dir, err)
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
// meka/name from HEAD, and prunes what killed processes left first. It is
// not locked: a lock would outlive a killed meka, and a worktree whose
// directory exists is never pruned anyway.
func (o Options) Create(ctx context.Context, dir, name string) (Worktree, error) {
	if !validName.MatchString(name) {
		return Worktree{}, fmt.Errorf("worktree: name %q: use letters, digits, '.', '_' and '-' (at most 64)", name)
	}
	top, err := o.Top(ctx, dir)
	if err != nil {
		return Worktree{}, err
	}
	if _, err := o.git(ctx, top, "worktree", "prune"); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	path := filepath.Join(o.base(top), name)
	if _, err := os.Stat(path); err == nil {
		return Worktree{}, fmt.Errorf("worktree: %w: %s (meka worktrees remove %s)", ErrExists, path, name)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	branch := BranchPrefix + name
	args := []string{"worktree", "add", "-b", branch, path, "HEAD"}
	if _, err := o.git(ctx, top, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		// The branch of a worktree removed with --keep-branch, or lost
		// with its directory: its work is taken up again, not reset.
		args = []string{"worktree", "add", path, branch}
	}
	if _, err := o.git(ctx, top, args...); err != nil {
		return Worktree{}, fmt.Errorf("worktree: %w", err)
	}
	return Worktree{Name: name, Path: path, Branch: branch, Repo: top}, nil
}

// List lists meka's worktrees of the repository dir is in.
func (o Options) List(ctx context.Context, dir string) ([]Worktree, error) {
	top, err := o.Top(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := o.git(ctx, top, "worktree", "list", "--porcelain")
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
			o.git(ctx, w.Repo, "worktree", "unlock", w.Path)
		}
		args := []string{"worktree", "remove", w.Path}
		if force {
			args = []string{"worktree", "remove", "--force", w.Path}
		}
		if _, err := o.git(ctx, w.Repo, args...); err != nil {
			return fmt.Errorf("worktree %s: %w (--force removes it with its changes)", name, err)
		}
		if !keepBranch && strings.HasPrefix(w.Branch, BranchPrefix) {
			if _, err := o.git(ctx, w.Repo, "branch", "-D", w.Branch); err != nil {
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
	_, err = o.git(ctx, top, "worktree", "prune")
	return err
}
