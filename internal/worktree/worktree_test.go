package worktree_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/internal/worktree"
)

func repo(t *testing.T) string {
	t.Helper()
	dir := testenv.GitRepo(t, nil)
	testenv.Sh(t, dir, "echo hi > a.txt && git add a.txt && git commit -q -m a")
	return dir
}

func TestCreateListRemove(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}
	w, err := o.Create(ctx, r, "fix-1")
	if err != nil {
		t.Fatal(err)
	}
	if w.Branch != "meka/fix-1" || !strings.HasPrefix(w.Path, o.Dir) {
		t.Fatalf("worktree %+v", w)
	}
	if b, err := os.ReadFile(filepath.Join(w.Path, "a.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("checkout: %q %v", b, err)
	}
	if _, err := o.Create(ctx, r, "fix-1"); !errors.Is(err, worktree.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := o.Create(ctx, r, "../escape"); err == nil {
		t.Fatal("a name with a path was taken")
	}
	// From inside the worktree, the list is the same repository's.
	wts, err := o.List(ctx, w.Path)
	if err != nil || len(wts) != 1 || wts[0].Name != "fix-1" || wts[0].Branch != "meka/fix-1" {
		t.Fatalf("list %+v %v", wts, err)
	}
	os.WriteFile(filepath.Join(w.Path, "a.txt"), []byte("changed\n"), 0o644)
	if err := o.Remove(ctx, r, "fix-1", false, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("removing a dirty worktree: %v", err)
	}
	if err := o.Remove(ctx, r, "fix-1", true, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Path); !os.IsNotExist(err) {
		t.Fatalf("directory left: %v", err)
	}
	if out := testenv.Sh(t, r, "git branch --list 'meka/*'"); strings.TrimSpace(out) != "" {
		t.Fatalf("branch left: %q", out)
	}
}

// A worktree whose directory a killed meka left half made (or someone
// deleted) is cleared by git's prune on the next Create: no orphan record
// or lock stays, and the name can be used again.
func TestCreateAfterCrash(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}
	w, err := o.Create(ctx, r, "a")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Sh(t, w.Path, "echo work > new.txt && git add new.txt && git commit -q -m work")
	os.RemoveAll(w.Path)
	if _, err := o.Create(ctx, r, "b"); err != nil {
		t.Fatal(err)
	}
	wts, err := o.List(ctx, r)
	if err != nil || len(wts) != 1 || wts[0].Name != "b" {
		t.Fatalf("list after crash: %+v %v", wts, err)
	}
	if out := testenv.Sh(t, r, "git worktree list --porcelain"); strings.Contains(out, "prunable") || strings.Contains(out, "locked") {
		t.Fatalf("git still records the lost worktree: %s", out)
	}
	again, err := o.Create(ctx, r, "a")
	if err != nil {
		t.Fatalf("the name is not free again: %v", err)
	}
	// The branch's work is taken up again.
	if _, err := os.Stat(filepath.Join(again.Path, "new.txt")); err != nil {
		t.Fatalf("the branch's commit is lost: %v", err)
	}
}

func TestNotARepository(t *testing.T) {
	testenv.NeedGit(t)
	o := worktree.Options{Dir: t.TempDir()}
	if _, err := o.Create(context.Background(), t.TempDir(), "x"); !errors.Is(err, worktree.ErrNotRepository) || !strings.Contains(err.Error(), "not in a git repository") {
		t.Fatalf("err = %v", err)
	}
}

// Changes counts commits and uncommitted files (untracked ones included)
// from the base, without touching the worktree's index; Settle keeps a
// worktree with changes and removes one without, its branch with it.
func TestChangesAndSettle(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}

	clean, err := o.Create(ctx, r, "clean")
	if err != nil {
		t.Fatal(err)
	}
	// Ignored files are not changes.
	testenv.Sh(t, clean.Path, "mkdir -p out && echo x > out/bin && ex=$(git rev-parse --git-path info/exclude) && mkdir -p $(dirname $ex) && echo out/ >> $ex")
	c, kept, err := o.Settle(ctx, clean)
	if err != nil || kept || !c.Empty() || c.Stat != "" {
		t.Fatalf("settle of an unchanged worktree: %+v kept=%v %v", c, kept, err)
	}
	if _, err := os.Stat(clean.Path); !os.IsNotExist(err) {
		t.Fatalf("unchanged worktree left: %v", err)
	}
	if out := testenv.Sh(t, r, "git branch --list meka/clean"); strings.TrimSpace(out) != "" {
		t.Fatalf("its branch left: %q", out)
	}

	w, err := o.Create(ctx, r, "busy")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Sh(t, w.Path, "printf 'one\\ntwo\\n' > new.txt && echo bye > a.txt")
	indexBefore := testenv.Sh(t, w.Path, "git ls-files --stage")
	// A process that did not create it (a restarted meka) finds the same base.
	again, err := o.Open(ctx, w.Path)
	if err != nil || again.Base != w.Base || again.Branch != "meka/busy" || again.Name != "busy" {
		t.Fatalf("open: %+v %v (created %+v)", again, err, w)
	}
	c, err = o.Changes(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if c.Commits != 0 || !c.Uncommitted || c.Files != 2 || c.Insertions != 3 || c.Deletions != 1 ||
		!strings.Contains(c.Stat, "new.txt") || !strings.Contains(c.Stat, "a.txt") {
		t.Fatalf("uncommitted changes: %+v", c)
	}
	if after := testenv.Sh(t, w.Path, "git ls-files --stage"); after != indexBefore {
		t.Fatalf("the worktree's index changed:\n%s\nwas\n%s", after, indexBefore)
	}
	testenv.Sh(t, w.Path, "git add -A && git commit -q -m work")
	c, kept, err = o.Settle(ctx, again)
	if err != nil || !kept || c.Commits != 1 || c.Uncommitted || c.Files != 2 {
		t.Fatalf("settle of a worktree with a commit: %+v kept=%v %v", c, kept, err)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "new.txt")); err != nil {
		t.Fatalf("a worktree with changes was removed: %v", err)
	}
}

// A worktree made from another worktree starts from that one's commit.
func TestCreateFromWorktreeHead(t *testing.T) {
	ctx := context.Background()
	r := repo(t)
	o := worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}
	a, err := o.Create(ctx, r, "a")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Sh(t, a.Path, "echo more > more.txt && git add more.txt && git commit -q -m more")
	b, err := o.Create(ctx, a.Path, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(b.Path, "more.txt")); err != nil {
		t.Fatalf("b does not start from a's commit: %v", err)
	}
	if c, err := o.Changes(ctx, b); err != nil || !c.Empty() {
		t.Fatalf("b's changes: %+v %v", c, err)
	}
}

func TestNoCommitYet(t *testing.T) {
	testenv.NeedGit(t)
	dir := t.TempDir()
	testenv.Sh(t, dir, "git init -q")
	o := worktree.Options{Dir: t.TempDir()}
	if _, err := o.Create(context.Background(), dir, "x"); err == nil || !strings.Contains(err.Error(), "no commit") {
		t.Fatalf("err = %v", err)
	}
}

// The lock files a killed git left in a worktree are cleared by the next
// List, once no process works there; a worktree a process works in keeps
// them.
func TestListClearsStaleLocks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("stale locks are found through /proc")
	}
	ctx := context.Background()
	r := repo(t)
	o := worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}
	w, err := o.Create(ctx, r, "a")
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(testenv.Sh(t, w.Path, "git rev-parse --absolute-git-dir"))
	lock := filepath.Join(admin, "index.lock")
	os.WriteFile(lock, nil, 0o644)
	// A process working in the worktree: the lock may be its.
	sleeper := exec.Command("sleep", "600")
	sleeper.Dir = w.Path
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	if _, err := o.List(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("a lock was cleared while a process worked in the worktree: %v", err)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	if _, err := o.List(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("stale lock left: %v", err)
	}
	testenv.Sh(t, w.Path, "echo x > b.txt && git add b.txt")
}

// RunGit acts on dir's repository even when a hook's GIT_DIR names
// another, keeps the leading spaces git aligns its output with, and says
// what git said when it fails.
func TestRunGit(t *testing.T) {
	r := repo(t)
	testenv.Sh(t, r, "echo bye > a.txt")
	other := testenv.GitRepo(t, nil)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	var o worktree.Options
	if out, err := o.RunGit(t.Context(), r, "status", "--porcelain"); err != nil || out != " M a.txt" {
		t.Fatalf("status = %q, %v", out, err)
	}
	_, err := o.RunGit(t.Context(), r, "rev-parse", "--verify", "no-such-branch")
	var ge *worktree.GitError
	var exit *exec.ExitError
	if !errors.As(err, &ge) || ge.Args[0] != "rev-parse" || !strings.Contains(ge.Stderr, "Needed a single revision") ||
		!errors.As(err, &exit) || exit.ExitCode() != 128 {
		t.Fatalf("err = %v", err)
	}
}
