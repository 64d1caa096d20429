package worktree_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/internal/worktree"
)

func repo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	dir := t.TempDir()
	run(t, dir, "git init -q -b main && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m init && echo hi > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -q -m a")
	return dir
}

func run(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	return string(out)
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
	if out := run(t, r, "git branch --list 'meka/*'"); strings.TrimSpace(out) != "" {
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
	run(t, w.Path, "echo work > new.txt && git add new.txt && git -c user.name=t -c user.email=t@t commit -q -m work")
	os.RemoveAll(w.Path)
	if _, err := o.Create(ctx, r, "b"); err != nil {
		t.Fatal(err)
	}
	wts, err := o.List(ctx, r)
	if err != nil || len(wts) != 1 || wts[0].Name != "b" {
		t.Fatalf("list after crash: %+v %v", wts, err)
	}
	if out := run(t, r, "git worktree list --porcelain"); strings.Contains(out, "prunable") || strings.Contains(out, "locked") {
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
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	o := worktree.Options{Dir: t.TempDir()}
	if _, err := o.Create(context.Background(), t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "not in a git repository") {
		t.Fatalf("err = %v", err)
	}
}
