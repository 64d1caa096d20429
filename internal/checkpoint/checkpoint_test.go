package checkpoint_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/checkpoint"
	"meka.dev/meka/internal/testenv"
)

func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

func open(t testing.TB, root string, o checkpoint.Options) *checkpoint.Store {
	t.Helper()
	needGit(t)
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), "checkpoints")
	}
	o.Roots = []string{root}
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o.Now = c.now
	s, err := checkpoint.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
}

// A turn that writes a file, edits one with sed -i in a shell and deletes
// one with rm is rewound: the edited and deleted files come back, the
// written one goes; ignored build output is left as it is.
func TestRewindWriteSedRm(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, ".gitignore"), "build/\n")
	write(t, filepath.Join(root, "a.txt"), "hello\n")
	write(t, filepath.Join(root, "dir", "b.txt"), "keep me\n")
	write(t, filepath.Join(root, "build", "out.o"), "old object\n")
	s := open(t, root, checkpoint.Options{})

	// Turn 1 changes nothing but is listed as such.
	if _, err := s.Snapshot(ctx, "s1", 2, checkpoint.KindBefore); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "new.txt"), "created\n")
	sh(t, root, "sed -i 's/hello/bye/' a.txt && rm dir/b.txt && echo new object > build/out.o")
	if _, err := s.Snapshot(ctx, "s1", 2, checkpoint.KindAfter); err != nil {
		t.Fatal(err)
	}

	turns, err := s.Turns(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Turn != 2 {
		t.Fatalf("turns = %+v", turns)
	}
	got := map[string]string{}
	for _, c := range turns[0].Changes {
		rel, _ := filepath.Rel(root, c.Path)
		got[rel] = c.Op
	}
	want := map[string]string{"a.txt": "modified", "dir/b.txt": "deleted", "new.txt": "added"}
	if len(got) != len(want) {
		t.Fatalf("changes = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("changes = %v, want %v", got, want)
		}
	}

	res, err := s.Rewind(ctx, "s1", 1, checkpoint.RestoreOptions{Turn: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 3 {
		t.Fatalf("rewind changes = %+v", res.Changes)
	}
	if read(t, filepath.Join(root, "a.txt")) != "hello\n" || read(t, filepath.Join(root, "dir", "b.txt")) != "keep me\n" {
		t.Fatal("edited or deleted file not put back")
	}
	if _, err := os.Stat(filepath.Join(root, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("created file not removed: %v", err)
	}
	if read(t, filepath.Join(root, "build", "out.o")) != "new object\n" {
		t.Fatal("ignored build output was touched")
	}

	// The rewind is itself recorded: its Undo puts the turn's work back.
	if _, err := s.RestorePoint(ctx, "s1", res.Undo.Seq, checkpoint.RestoreOptions{Turn: 3}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "bye\n" || read(t, filepath.Join(root, "new.txt")) != "created\n" {
		t.Fatal("undo did not put the turn's work back")
	}
	if _, err := os.Stat(filepath.Join(root, "dir", "b.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("undo did not delete again: %v", err)
	}
}

// A file changed outside meka since its last checkpoint refuses the
// rewind, naming it, and nothing is touched; --force overwrites it.
func TestRewindRefusesOutsideChange(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, "a.txt"), "one\n")
	s := open(t, root, checkpoint.Options{})
	s.Snapshot(ctx, "s", 1, checkpoint.KindBefore)
	write(t, filepath.Join(root, "a.txt"), "two\n")
	s.Snapshot(ctx, "s", 1, checkpoint.KindAfter)
	write(t, filepath.Join(root, "a.txt"), "person's edit\n")

	_, err := s.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 2})
	var ce *checkpoint.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(root, "a.txt")) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v, want a conflict naming a.txt", err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "person's edit\n" {
		t.Fatal("refused rewind touched the file")
	}
	res, err := s.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 2, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "one\n" {
		t.Fatal("forced rewind did not restore")
	}
	// Even forced, the person's edit is kept for an undo.
	if _, err := s.RestorePoint(ctx, "s", res.Undo.Seq, checkpoint.RestoreOptions{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "person's edit\n" {
		t.Fatal("undo lost the person's edit")
	}
}

// Files over the size limit are skipped and named, and never touched.
func TestLargeFileSkipped(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, "small.txt"), "s\n")
	s := open(t, root, checkpoint.Options{MaxFileBytes: 100})
	s.Snapshot(ctx, "s", 1, checkpoint.KindBefore)
	write(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 1000))
	p, err := s.Snapshot(ctx, "s", 1, checkpoint.KindAfter)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Skipped) != 1 || p.Skipped[0] != filepath.Join(root, "big.bin") {
		t.Fatalf("skipped = %v", p.Skipped)
	}
	turns, _ := s.Turns(ctx, "s")
	if len(turns) != 1 || len(turns[0].Changes) != 0 || len(turns[0].Skipped) != 1 {
		t.Fatalf("turns = %+v", turns)
	}
	if _, err := s.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "big.bin")); err != nil {
		t.Fatal("skipped file was removed")
	}
}

// Over max_bytes the oldest checkpoints are pruned, and a rewind says it
// cannot cross them while later turns still rewind.
func TestPruning(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s := open(t, root, checkpoint.Options{MaxBytes: 300 << 10})
	for turn := int64(1); turn <= 6; turn++ {
		if _, err := s.Snapshot(ctx, "s", turn, checkpoint.KindBefore); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 100<<10) // incompressible
		rand.Read(b)
		if err := os.WriteFile(filepath.Join(root, "blob.bin"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Snapshot(ctx, "s", turn, checkpoint.KindAfter); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 7})
	var pe *checkpoint.PrunedError
	if !errors.As(err, &pe) || pe.Oldest <= 1 {
		t.Fatalf("err = %v, want pruned", err)
	}
	before, _ := os.ReadFile(filepath.Join(root, "blob.bin"))
	if _, err := s.Rewind(ctx, "s", 6, checkpoint.RestoreOptions{Turn: 7}); err != nil {
		t.Fatalf("the newest turn no longer rewinds: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(root, "blob.bin"))
	if string(before) == string(after) {
		t.Fatal("rewind of turn 6 changed nothing")
	}
}

// A session's ledger survives the process: a store opened again (after a
// kill -9) rewinds what the first recorded, and a torn last line is
// ignored.
func TestReopenAfterCrash(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(t.TempDir(), "cp")
	write(t, filepath.Join(root, "a.txt"), "v1\n")
	s := open(t, root, checkpoint.Options{Dir: dir})
	s.Snapshot(ctx, "s", 1, checkpoint.KindBefore)
	write(t, filepath.Join(root, "a.txt"), "v2\n")
	s.Snapshot(ctx, "s", 1, checkpoint.KindAfter)
	f, _ := os.OpenFile(filepath.Join(dir, "ledger", "s.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"seq":99,"sess`)
	f.Close()

	// Opened to rewind only (meka sessions rewind): the roots are the ones
	// the points name.
	s2, err := checkpoint.Open(ctx, checkpoint.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "v1\n" {
		t.Fatal("not rewound")
	}
}

// A fork with its files: the state after a turn is written into another
// directory and the root is left as it is.
func TestExport(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	write(t, filepath.Join(root, "a.txt"), "v1\n")
	s := open(t, root, checkpoint.Options{})
	s.Snapshot(ctx, "s", 1, checkpoint.KindBefore)
	write(t, filepath.Join(root, "a.txt"), "v2\n")
	write(t, filepath.Join(root, "d", "b.txt"), "b\n")
	s.Snapshot(ctx, "s", 1, checkpoint.KindAfter)
	s.Snapshot(ctx, "s", 2, checkpoint.KindBefore)
	write(t, filepath.Join(root, "a.txt"), "v3\n")
	s.Snapshot(ctx, "s", 2, checkpoint.KindAfter)

	dest := filepath.Join(t.TempDir(), "fork")
	if err := s.Export(ctx, "s", 1, root, dest); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dest, "a.txt")) != "v2\n" || read(t, filepath.Join(dest, "d", "b.txt")) != "b\n" {
		t.Fatal("the fork's files are not those after turn 1")
	}
	if read(t, filepath.Join(root, "a.txt")) != "v3\n" {
		t.Fatal("the root was touched")
	}
	dest0 := filepath.Join(t.TempDir(), "fork0")
	if err := s.Export(ctx, "s", 0, root, dest0); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dest0, "a.txt")) != "v1\n" {
		t.Fatal("the fork at turn 0 is not the state before turn 1")
	}
	if _, err := os.Stat(filepath.Join(dest0, "d")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a file created later is in the fork at turn 0")
	}
}

// A file rewritten with the same size and its mtime put back is still
// seen as changed (its change time moved), and the stat cache kept in
// the store serves a store opened later.
func TestStatCacheSeesRewrites(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(t.TempDir(), "cp")
	write(t, filepath.Join(root, "a.txt"), "one\n")
	write(t, filepath.Join(root, "b.txt"), "same\n")
	s := open(t, root, checkpoint.Options{Dir: dir})
	checkpoint.TrustStat(s)
	if _, err := s.Snapshot(ctx, "s", 1, checkpoint.KindBefore); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "a.txt"), "two\n")
	if err := os.Chtimes(filepath.Join(root, "a.txt"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshot(ctx, "s", 1, checkpoint.KindAfter); err != nil {
		t.Fatal(err)
	}
	turns, err := s.Turns(ctx, "s")
	if err != nil || len(turns) != 1 || len(turns[0].Changes) != 1 || turns[0].Changes[0].Path != filepath.Join(root, "a.txt") {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	// A second store (another process) reads the cache the first wrote,
	// and still sees a change made since.
	s2 := open(t, root, checkpoint.Options{Dir: dir})
	checkpoint.TrustStat(s2)
	write(t, filepath.Join(root, "b.txt"), "diff\n")
	s2.Snapshot(ctx, "s", 2, checkpoint.KindBefore)
	write(t, filepath.Join(root, "b.txt"), "more\n")
	s2.Snapshot(ctx, "s", 2, checkpoint.KindAfter)
	if _, err := s2.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 3}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "a.txt")) != "one\n" || read(t, filepath.Join(root, "b.txt")) != "same\n" {
		t.Fatal("not rewound to before turn 1")
	}
}

// A rewind never writes through a symlink: a directory the turn replaced
// by a symlink out of the root is made a directory again, and nothing
// is written where the link pointed.
func TestRestoreRefusesSymlinkedDirectory(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, "d", "f.txt"), "mine\n")
	s := open(t, root, checkpoint.Options{})
	s.Snapshot(ctx, "s", 1, checkpoint.KindBefore)
	sh(t, root, "rm -r d && ln -s "+outside+" d")
	s.Snapshot(ctx, "s", 1, checkpoint.KindAfter)
	if _, err := s.Rewind(ctx, "s", 1, checkpoint.RestoreOptions{Turn: 2}); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(root, "d", "f.txt")) != "mine\n" {
		t.Fatal("not restored")
	}
	if fi, err := os.Lstat(filepath.Join(root, "d")); err != nil || !fi.IsDir() {
		t.Fatalf("d is not a directory again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "f.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("written through the symlink")
	}
}
