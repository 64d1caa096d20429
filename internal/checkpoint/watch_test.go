package checkpoint_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"meka.dev/meka/internal/checkpoint"
	"meka.dev/meka/internal/sandbox"
)

// needWatcher skips where snapshots always scan the whole root.
func needWatcher(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the watcher is inotify's")
	}
}

// sameAsFullScan takes a snapshot with s and one with a new store of the
// same root, whose first snapshot lists every directory: the trees (named
// by their content) must be the same. It returns whether s's snapshot was
// a full scan.
func sameAsFullScan(t *testing.T, s *checkpoint.Store, dir, root, step string) bool {
	return sameAsFullScanOf(t, s, checkpoint.Options{Dir: dir}, root, step)
}

func sameAsFullScanOf(t *testing.T, s *checkpoint.Store, o checkpoint.Options, root, step string) bool {
	t.Helper()
	ctx := context.Background()
	p, err := s.Snapshot(ctx, "watched", 1, checkpoint.KindAfter)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	full := checkpoint.FullScan(s)
	o.Roots = []string{root}
	fresh, err := checkpoint.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	q, err := fresh.Snapshot(ctx, "oracle", 1, checkpoint.KindAfter)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if p.Trees[root] != q.Trees[root] || !slices.Equal(p.Skipped, q.Skipped) {
		got, _ := checkpoint.Files(s, p, root)
		want, _ := checkpoint.Files(fresh, q, root)
		t.Fatalf("%s: the watched snapshot differs from a full scan:\nwatched %v skipped %v\nfull    %v skipped %v",
			step, got, p.Skipped, want, q.Skipped)
	}
	return full
}

// Every kind of change the watcher must report, each made right before a
// snapshot: the snapshot revisits only what changed, and records what a
// scan of the whole root records.
func TestWatchedSnapshotMatchesFullScan(t *testing.T) {
	needWatcher(t)
	root := t.TempDir()
	outside := t.TempDir()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	write(t, filepath.Join(root, "a.txt"), "a\n")
	write(t, filepath.Join(root, "pkg/b.txt"), "b\n")
	write(t, filepath.Join(root, "pkg/deep/c.txt"), "c\n")
	write(t, filepath.Join(root, "build/out.o"), "obj\n")
	write(t, filepath.Join(root, "pkg/.gitignore"), "*.log\n")
	write(t, filepath.Join(root, ".gitignore"), "build/\n")
	write(t, filepath.Join(root, "linked.txt"), "one\n")
	if err := os.Link(filepath.Join(root, "linked.txt"), filepath.Join(outside, "link.txt")); err != nil {
		t.Fatal(err)
	}
	opts := checkpoint.Options{Dir: dir, MaxFileBytes: 64}
	s := open(t, root, opts)
	if !sameAsFullScanOf(t, s, opts, root, "first") {
		t.Fatal("the first snapshot did not list the root")
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"rewrite in place, same size", func() { write(t, filepath.Join(root, "a.txt"), "A\n") }},
		{"new nested directories", func() { write(t, filepath.Join(root, "x/y/z/new.txt"), "new\n") }},
		{"write in a directory just made", func() { write(t, filepath.Join(root, "x/y/z/second.txt"), "2\n") }},
		{"rename a file across directories", func() {
			mustDo(t, os.Rename(filepath.Join(root, "pkg/b.txt"), filepath.Join(root, "x/b.txt")))
		}},
		{"rename a directory", func() {
			mustDo(t, os.Rename(filepath.Join(root, "x/y"), filepath.Join(root, "pkg/moved")))
		}},
		{"write inside the moved directory", func() { write(t, filepath.Join(root, "pkg/moved/z/new.txt"), "changed\n") }},
		{"a directory swapped for another", func() {
			write(t, filepath.Join(outside, "other/o.txt"), "other\n")
			mustDo(t, os.Rename(filepath.Join(root, "pkg/moved"), filepath.Join(outside, "swapped")))
			mustDo(t, os.Rename(filepath.Join(outside, "other"), filepath.Join(root, "pkg/moved")))
		}},
		{"and back", func() {
			mustDo(t, os.Rename(filepath.Join(root, "pkg/moved"), filepath.Join(outside, "other")))
			mustDo(t, os.Rename(filepath.Join(outside, "swapped"), filepath.Join(root, "pkg/moved")))
		}},
		{"move a directory out of the root", func() {
			mustDo(t, os.Rename(filepath.Join(root, "pkg/moved"), filepath.Join(outside, "moved")))
		}},
		{"write to it outside", func() { write(t, filepath.Join(outside, "moved/z/new.txt"), "outside\n") }},
		{"move it back", func() {
			mustDo(t, os.Rename(filepath.Join(outside, "moved"), filepath.Join(root, "back")))
		}},
		{"delete a file", func() { mustDo(t, os.Remove(filepath.Join(root, "x/b.txt"))) }},
		{"delete a tree", func() { mustDo(t, os.RemoveAll(filepath.Join(root, "pkg/deep"))) }},
		{"empty directory", func() { mustDo(t, os.Mkdir(filepath.Join(root, "empty"), 0o755)) }},
		{"file in the empty directory", func() { write(t, filepath.Join(root, "empty/f"), "f\n") }},
		{"ignored file", func() { write(t, filepath.Join(root, "pkg/debug.log"), "log\n") }},
		{"nested .gitignore ignores more", func() { write(t, filepath.Join(root, "pkg/.gitignore"), "*.log\nmoved/\n") }},
		{"nested .gitignore ignores less", func() { write(t, filepath.Join(root, "pkg/.gitignore"), "") }},
		{"a directory becomes a repository", func() { mustDo(t, os.Mkdir(filepath.Join(root, "back/.git"), 0o755)) }},
		{"and stops being one", func() { mustDo(t, os.Remove(filepath.Join(root, "back/.git"))) }},
		{"a directory made unreadable", func() { mustDo(t, os.Chmod(filepath.Join(root, "back/z"), 0)) }},
		{"and readable again", func() { mustDo(t, os.Chmod(filepath.Join(root, "back/z"), 0o755)) }},
		{"chmod +x", func() { mustDo(t, os.Chmod(filepath.Join(root, "a.txt"), 0o755)) }},
		{"symlink", func() { mustDo(t, os.Symlink("a.txt", filepath.Join(root, "pkg/link"))) }},
		{"symlink retargeted", func() {
			mustDo(t, os.Remove(filepath.Join(root, "pkg/link")))
			mustDo(t, os.Symlink("b.txt", filepath.Join(root, "pkg/link")))
		}},
		{"a file becomes a directory", func() {
			mustDo(t, os.Remove(filepath.Join(root, "empty/f")))
			write(t, filepath.Join(root, "empty/f/inner"), "inner\n")
		}},
		{"a directory becomes a file", func() {
			mustDo(t, os.RemoveAll(filepath.Join(root, "empty/f")))
			write(t, filepath.Join(root, "empty/f"), "file again\n")
		}},
		{"write through a hard link outside the root", func() { write(t, filepath.Join(outside, "link.txt"), "two\n") }},
		{"a file over the size limit", func() { write(t, filepath.Join(root, "big"), string(make([]byte, 100))) }},
		{"shrunk under it", func() { write(t, filepath.Join(root, "big"), "small\n") }},
		{"a shell command", func() { sh(t, root, "mkdir -p sh/a && echo 1 > sh/a/f && mv a.txt sh/ && rm -r back") }},
	}
	for _, st := range steps {
		st.change()
		if sameAsFullScanOf(t, s, opts, root, st.name) {
			t.Errorf("%s: a full scan, not the watcher's changes", st.name)
		}
	}
	// The root's own .gitignore can change any decision: a full scan.
	write(t, filepath.Join(root, ".gitignore"), "")
	if !sameAsFullScanOf(t, s, opts, root, "root .gitignore") {
		t.Error("a change of the root's .gitignore did not list the root again")
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Events lost (an overflowed queue) mean a full scan, which sees the
// change; the watcher then starts again.
func TestLostEventsMeanAFullScan(t *testing.T) {
	needWatcher(t)
	root := t.TempDir()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	write(t, filepath.Join(root, "a/f.txt"), "one\n")
	s := open(t, root, checkpoint.Options{Dir: dir})
	sameAsFullScan(t, s, dir, root, "first")
	write(t, filepath.Join(root, "a/f.txt"), "two\n")
	checkpoint.LoseEvents(s)
	if !sameAsFullScan(t, s, dir, root, "events lost") {
		t.Error("lost events did not mean a full scan")
	}
	write(t, filepath.Join(root, "a/g.txt"), "three\n")
	if sameAsFullScan(t, s, dir, root, "after") {
		t.Error("the watcher did not start again")
	}
}

// Pruning may remove objects of trees a snapshot would reuse: the next
// snapshot lists the root again.
func TestSweepMeansAFullScan(t *testing.T) {
	needWatcher(t)
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(t.TempDir(), "checkpoints")
	write(t, filepath.Join(root, "f.txt"), "one\n")
	s := open(t, root, checkpoint.Options{Dir: dir, MaxBytes: 1})
	for i := range 3 {
		write(t, filepath.Join(root, "f.txt"), string(rune('a'+i)))
		if _, err := s.Snapshot(ctx, "s", int64(i), checkpoint.KindAfter); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if !sameAsFullScan(t, s, dir, root, "after prune") {
		t.Error("a snapshot after pruning reused trees")
	}
}

// Commands confined in other mount namespaces write the same inodes: the
// watcher sees their changes.
func TestWatcherSeesConfinedCommands(t *testing.T) {
	needWatcher(t)
	ran := false
	for _, backend := range sandbox.Backends {
		t.Run(backend, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(t.TempDir(), "checkpoints")
			write(t, filepath.Join(root, "a/f.txt"), "one\n")
			s := open(t, root, checkpoint.Options{Dir: dir})
			sameAsFullScan(t, s, dir, root, "first")
			cmd, err := sandbox.Command(t.Context(), sandbox.Spec{
				Args:     []string{"sh", "-c", "echo two > a/f.txt && mkdir -p b/c && echo new > b/c/g.txt && rm -r a"},
				Dir:      root,
				Env:      []string{"PATH=" + os.Getenv("PATH")},
				Mode:     sandbox.Workspace,
				Writable: []string{root},
				TempDir:  t.TempDir(),
				Backend:  backend,
			})
			if errors.Is(err, sandbox.ErrNoConfinement) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			ran = true
			if sameAsFullScan(t, s, dir, root, "confined command") {
				t.Error("a full scan, not the watcher's changes")
			}
			if _, err := os.Stat(filepath.Join(root, "b/c/g.txt")); err != nil {
				t.Fatal("the confined command did not write the root")
			}
		})
	}
	if !ran {
		t.Skip("no sandbox backend here")
	}
}
