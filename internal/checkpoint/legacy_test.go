package checkpoint_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/checkpoint"
)

// A store an older meka left (git's index, trees written by git add and
// write-tree, packed by its gc after pruning) still rewinds: its packs
// are unpacked once, and restoring reads them as any other object.
func TestOlderStoreStillRewinds(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	sum := sha256.Sum256([]byte(root))
	gitDir := filepath.Join(dir, "repos", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(gitDir, 0o700); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir, "--work-tree=" + root}, args...)...)
		cmd.Dir = root
		cmd.Env = append(cmd.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// As the older meka did it.
	git("init", "-q")
	snap := func() string {
		git("add", "-A")
		tree := git("write-tree")
		git("update-ref", "refs/meka/trees/"+tree, tree)
		return tree
	}
	write(t, filepath.Join(root, "a.txt"), "v1\n")
	write(t, filepath.Join(root, "d", "gone.txt"), "old\n")
	before := snap()
	write(t, filepath.Join(root, "a.txt"), "v2\n")
	os.RemoveAll(filepath.Join(root, "d"))
	write(t, filepath.Join(root, "new.txt"), "created\n")
	after := snap()
	git("gc", "-q", "--prune=now")
	if packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack")); len(packs) == 0 {
		t.Fatal("the older store is not packed")
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ledger []byte
	for _, p := range []checkpoint.Point{
		{Seq: 1, Session: "old", Turn: 1, Kind: checkpoint.KindBefore, Time: t0, Trees: map[string]string{root: before}},
		{Seq: 2, Session: "old", Turn: 1, Kind: checkpoint.KindAfter, Time: t0.Add(time.Second), Trees: map[string]string{root: after}},
	} {
		b, _ := json.Marshal(p)
		ledger = append(append(ledger, b...), '\n')
	}
	write(t, filepath.Join(dir, "ledger", "old.jsonl"), string(ledger))

	// meka sessions rewind opens the store without roots of its own.
	s, err := checkpoint.Open(ctx, checkpoint.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, "old")
	if err != nil || len(turns) != 1 || len(turns[0].Changes) != 3 {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	if _, err := s.Rewind(ctx, "old", 1, checkpoint.RestoreOptions{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "v1\n" || read(t, filepath.Join(root, "d", "gone.txt")) != "old\n" {
		t.Fatal("the older store's files were not put back")
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("created file not removed: %v", err)
	}
	if packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.pack")); len(packs) != 0 {
		t.Fatalf("packs left: %v", packs)
	}
	// And it keeps working as a store of this meka.
	s2 := open(t, root, checkpoint.Options{Dir: dir})
	if _, err := s2.Snapshot(ctx, "new", 1, checkpoint.KindBefore); err != nil {
		t.Fatal(err)
	}
}
