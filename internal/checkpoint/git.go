package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// shadow is the shadow git repository of one root: its object store and
// index live in the data directory, its work tree is the root, so git's
// stat cache makes a snapshot cost the files that changed, its object
// store deduplicates, and the root's .gitignore files are honoured. The
// workspace's own .git, if any, is never read or written.
type shadow struct {
	git  string
	dir  string // the git directory
	root string // the work tree
	// index, when set, is another index file than the shadow's own.
	index string
}

func shadowDir(base, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, "repos", hex.EncodeToString(sum[:8]))
}

// env is git's environment without anything of the person's that could
// change what it does: their GIT_* variables, global and system config.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0", "GIT_LITERAL_PATHSPECS=1", "GIT_OPTIONAL_LOCKS=0")
}

func (s *shadow) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	full := append([]string{"--git-dir=" + s.dir, "--work-tree=" + s.root,
		"-c", "core.hooksPath=" + os.DevNull, "-c", "core.autocrlf=false",
		"-c", "core.safecrlf=false", "-c", "gc.auto=0", "-c", "core.quotePath=false"}, args...)
	cmd := exec.CommandContext(ctx, s.git, full...)
	cmd.Dir = s.root
	cmd.Env = gitEnv()
	if s.index != "" {
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+s.index)
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("checkpoint: git %s in %s: %v: %s", args[0], s.root, err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

func (s *shadow) init(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := s.run(ctx, nil, "init", "-q"); err != nil {
		return err
	}
	for _, kv := range [][2]string{{"core.untrackedCache", "true"}, {"index.version", "4"},
		// A checkpoint is not worth a disk flush per object: the ledger
		// line that names it is not flushed either.
		{"core.fsync", "none"}} {
		if _, err := s.run(ctx, nil, "config", kv[0], kv[1]); err != nil {
			return err
		}
	}
	// meka's own worktrees inside the root are other sessions' files.
	return os.WriteFile(filepath.Join(s.dir, "info", "exclude"), []byte("/.meka/worktrees/\n"), 0o600)
}

// nulFields splits git's -z output.
func nulFields(b []byte) []string {
	var out []string
	for _, f := range bytes.Split(b, []byte{0}) {
		if len(f) > 0 {
			out = append(out, string(f))
		}
	}
	return out
}

// snapshot stages the root as it is (minus files over maxFile bytes,
// which it names) and returns the tree.
func (s *shadow) snapshot(ctx context.Context, maxFile int64) (tree string, skipped []string, err error) {
	// What differs from the shadow index (git's stat cache answers for
	// the unchanged files): modified, deleted and new files not ignored.
	// Only these are staged, so the tree is walked once, and only these
	// can have crossed the size limit.
	out, err := s.run(ctx, nil, "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard")
	if err != nil {
		return "", nil, err
	}
	var add, big []string
	for _, p := range nulFields(out) {
		fi, err := os.Lstat(filepath.Join(s.root, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && maxFile > 0 && fi.Size() > maxFile {
			big = append(big, p)
			continue
		}
		add = append(add, p)
	}
	if len(big) > 0 {
		if _, err := s.run(ctx, []byte(strings.Join(big, "\x00")), "rm", "--cached", "-q", "--ignore-unmatch",
			"--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return "", nil, err
		}
	}
	if len(add) > 0 {
		slices.Sort(add)
		add = slices.Compact(add)
		if _, err := s.run(ctx, []byte(strings.Join(add, "\x00")), "add", "-A", "-f",
			"--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return "", nil, err
		}
	}
	t, err := s.run(ctx, nil, "write-tree")
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(string(t)), big, nil
}

// Change is one file that differs between two states of a root.
type Change struct {
	Path string // absolute
	// Op is what going from the first state to the second did to it:
	// "added", "modified" or "deleted".
	Op string
}

func (s *shadow) diff(ctx context.Context, from, to string) ([]Change, error) {
	if from == to {
		return nil, nil
	}
	out, err := s.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to)
	if err != nil {
		return nil, err
	}
	f := nulFields(out)
	var cs []Change
	for i := 0; i+1 < len(f); i += 2 {
		op := "modified"
		switch f[i][0] {
		case 'A':
			op = "added"
		case 'D':
			op = "deleted"
		}
		cs = append(cs, Change{Path: filepath.Join(s.root, filepath.FromSlash(f[i+1])), Op: op})
	}
	return cs, nil
}

// checkout makes the root (and the index) match tree: files the index
// holds that tree lacks are removed, the rest written. Ignored and
// skipped files are not in the index and are left alone.
func (s *shadow) checkout(ctx context.Context, tree string) error {
	_, err := s.run(ctx, nil, "read-tree", "--reset", "-u", tree)
	return err
}

func (s *shadow) keep(ctx context.Context, ref, tree string) error {
	_, err := s.run(ctx, nil, "update-ref", ref, tree)
	return err
}

func (s *shadow) size(ctx context.Context) (int64, error) {
	out, err := s.run(ctx, nil, "count-objects", "-v")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok || (k != "size" && k != "size-pack") {
			continue
		}
		var n int64
		fmt.Sscan(v, &n)
		total += n * 1024
	}
	return total, nil
}
