package checkpoint

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
	"slices"
	"strings"
	"time"
)

// shadow is the shadow repository of one root: a git object store in the
// data directory, never inside the root (the workspace's own .git is
// never read or written). meka writes and reads its objects in-process,
// so no git process runs on a turn's path; the layout stays git's, so
// `git --git-dir` can inspect it.
type shadow struct {
	git   string // converts an older meka's packs, once
	dir   string // the git directory
	root  string // the work tree
	objs  objects
	cache statCache // read and written under the Store's mutex
	track *tracked  // nil for a root only restored
}

func shadowDir(base, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "repos", hex.EncodeToString(sum[:8]))
}

func newShadow(git, base, root string) *shadow {
	dir := shadowDir(base, root)
	return &shadow{git: git, dir: dir, root: root, objs: objects{dir: filepath.Join(dir, "objects")},
		cache: statCache{path: filepath.Join(dir, "meka-stat")}}
}

// init creates the store, or converts an older meka's packs.
func (s *shadow) init(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dir, "HEAD")); err == nil {
		return s.packsToLoose(ctx)
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(s.dir, filepath.FromSlash(d)), 0o700); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, "config"),
		[]byte("[core]\n\trepositoryformatversion = 0\n\tbare = true\n"), 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// HEAD last: its presence says the store is complete.
	if err := os.WriteFile(filepath.Join(s.dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// packsToLoose turns the packs an older meka's `git gc` wrote into loose
// objects, once, so that its sessions' checkpoints still restore and
// this meka reads every object the same way. It needs git; without it
// the store is refused with what to do.
func (s *shadow) packsToLoose(ctx context.Context) error {
	packs, _ := filepath.Glob(filepath.Join(s.objs.dir, "pack", "*.pack"))
	if len(packs) == 0 {
		return nil
	}
	git := s.git
	if git == "" {
		git = "git"
	}
	if _, err := exec.LookPath(git); err != nil {
		return fmt.Errorf("checkpoint: the checkpoints of %s were written by an older meka and need git once to be read (%v); install git, or remove %s to drop them", s.root, err, s.dir)
	}
	// unpack-objects skips objects the repository already has, the pack
	// itself included: it is moved aside first, and back on failure.
	aside := filepath.Join(s.dir, "meka-unpack")
	if err := os.MkdirAll(aside, 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, p := range packs {
		base := strings.TrimSuffix(p, ".pack")
		moved := filepath.Join(aside, filepath.Base(p))
		if err := os.Rename(p, moved); err != nil {
			continue // another process took it
		}
		f, err := os.Open(moved)
		if err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		cmd := exec.CommandContext(ctx, git, "--git-dir="+s.dir, "unpack-objects", "-q")
		cmd.Env = gitEnv()
		cmd.Stdin = f
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err = cmd.Run()
		f.Close()
		if err != nil {
			os.Rename(moved, p)
			return fmt.Errorf("checkpoint: convert the checkpoints of %s: git unpack-objects: %v: %s", s.root, err, strings.TrimSpace(errb.String()))
		}
		os.Remove(moved)
		for _, ext := range []string{".idx", ".rev", ".bitmap", ".keep", ".promisor", ".mtimes"} {
			os.Remove(base + ext)
		}
	}
	os.Remove(aside)
	os.Remove(filepath.Join(s.objs.dir, "info", "packs"))
	return nil
}

// gitEnv is git's environment without anything of the person's that
// could change what it does: their GIT_* variables, global and system
// config.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
}

// snapshot records the root as it is (minus ignored files, and files over
// maxFile bytes, which it names) and returns its tree and the bytes it
// added to the store.
func (s *shadow) snapshot(maxFile int64, racy time.Duration) (tree string, skipped []string, written int64, err error) {
	s.cache.load()
	sc := &scan{root: s.root, objs: s.objs, maxFile: maxFile, old: s.cache.entries,
		trusted: time.Now().Add(-racy).UnixNano(), track: s.track}
	if sc.old == nil {
		sc.old = map[string]cached{}
	}
	t := s.track
	root := (*dirNode)(nil)
	if t.prepare(s.dir) {
		root, sc.edits = t.root, map[string]cacheEdit{}
		err = sc.update(root, nil)
	} else {
		root, sc.next = newNode(nil, ""), make(map[string]cached, len(sc.old))
		err = sc.list(root, nil)
	}
	sc.unwatch()
	if t != nil {
		t.lastFull = sc.edits == nil
		if err == nil && t.w != nil {
			t.root = root
		} else {
			t.close()
		}
	}
	if err != nil {
		return "", nil, sc.written, err
	}
	if sc.cacheChanged() {
		if err := s.cache.save(sc.next); err != nil {
			return "", nil, sc.written, err
		}
	}
	skipped = slices.Clone(root.skip)
	slices.Sort(skipped)
	return root.tree.String(), skipped, sc.written, nil
}

// Change is one file that differs between two states of a root.
type Change struct {
	Path string // absolute
	// Op is what going from the first state to the second did to it:
	// "added", "modified" or "deleted".
	Op string
}

func (s *shadow) diff(from, to string) ([]Change, error) {
	if from == to {
		return nil, nil
	}
	a, err := parseOID(from)
	if err != nil {
		return nil, err
	}
	b, err := parseOID(to)
	if err != nil {
		return nil, err
	}
	var cs []Change
	err = s.objs.walkDiff(a, b, "", func(p string, x, y file) error {
		op := "modified"
		switch {
		case x.mode == 0:
			op = "added"
		case y.mode == 0:
			op = "deleted"
		}
		cs = append(cs, Change{Path: filepath.Join(s.root, filepath.FromSlash(p)), Op: op})
		return nil
	})
	return cs, err
}

// prune removes the objects that neither the trees kept nor the stat
// cache reach, returning the bytes the store then holds.
func (s *shadow) prune(kept []string) (int64, error) {
	keep := map[oid]bool{}
	for _, t := range kept {
		o, err := parseOID(t)
		if err != nil {
			continue
		}
		if err := s.objs.reachable(o, keep); err != nil && !errors.Is(err, ErrMissingObject) {
			return 0, err
		}
	}
	s.cache.load()
	for _, c := range s.cache.entries {
		keep[c.id] = true
	}
	// Snapshots that reuse trees recorded before must know that objects
	// may be gone.
	if err := stampSwept(s.dir); err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	return s.objs.sweep(keep)
}

func (s *shadow) size() (int64, error) { return s.objs.size() }
