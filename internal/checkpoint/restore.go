package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// checkout takes root from tree from (its state now; the zero id for an
// empty directory) to tree to, touching only the files that differ:
// files to lacks are removed (and directories left empty), the others
// written. Ignored and skipped files are in neither tree and are left
// alone. No directory on the way may be a symlink: a restore never
// writes outside root.
func checkout(objs objects, root string, from, to oid) error {
	type op struct {
		path     string
		from, to file
	}
	var dels, writes []op
	err := objs.walkDiff(from, to, "", func(p string, x, y file) error {
		if y.mode == 0 {
			dels = append(dels, op{p, x, y})
		} else {
			writes = append(writes, op{p, x, y})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Deepest first, so a directory emptied can go before its parent.
	slices.SortFunc(dels, func(a, b op) int { return strings.Compare(b.path, a.path) })
	for _, d := range dels {
		abs := filepath.Join(root, filepath.FromSlash(d.path))
		if err := safeParent(root, d.path, false); err != nil {
			return err
		}
		if err := os.Remove(abs); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("checkpoint: restore: %w", err)
		}
		for dir := filepath.Dir(abs); dir != root && strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break // not empty: ignored files, or files of the tree
			}
		}
	}
	for _, w := range writes {
		if err := safeParent(root, w.path, true); err != nil {
			return err
		}
		abs := filepath.Join(root, filepath.FromSlash(w.path))
		if w.from.id == w.to.id && w.from.mode != modeLink && w.to.mode != modeLink {
			if err := os.Chmod(abs, perm(w.to.mode)); err != nil {
				return fmt.Errorf("checkpoint: restore: %w", err)
			}
			continue
		}
		body, err := objs.readKind(w.to.id, "blob")
		if err != nil {
			return err
		}
		if err := writeFile(abs, w.to.mode, body); err != nil {
			return err
		}
	}
	return nil
}

func perm(mode uint32) os.FileMode {
	if mode == modeExec {
		return 0o755
	}
	return 0o644
}

// writeFile replaces whatever is at abs (a file or a symlink, never
// followed) with a file or symlink of the given content.
func writeFile(abs string, mode uint32, body []byte) error {
	if fi, err := os.Lstat(abs); err == nil {
		if fi.IsDir() {
			// Only files the snapshot skipped or ignored can be left in
			// it: git would refuse as well.
			return fmt.Errorf("checkpoint: restore %s: a directory is in the way", abs)
		}
		if err := os.Remove(abs); err != nil {
			return fmt.Errorf("checkpoint: restore: %w", err)
		}
	}
	if mode == modeLink {
		if err := os.Symlink(filepath.FromSlash(string(body)), abs); err != nil {
			return fmt.Errorf("checkpoint: restore: %w", err)
		}
		return nil
	}
	// O_EXCL: the name was just cleared, and a symlink put there since
	// is not followed.
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm(mode))
	if err != nil {
		return fmt.Errorf("checkpoint: restore: %w", err)
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && mode == modeExec {
		// The umask may have taken the execute bits.
		err = os.Chmod(abs, 0o755)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: restore %s: %w", abs, err)
	}
	return nil
}

// safeParent checks that every directory between root and rel's parent is
// a directory, not a symlink, creating the missing ones when create is
// set.
func safeParent(root, rel string, create bool) error {
	dir := root
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, p)
		fi, err := os.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) && create:
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("checkpoint: restore: %w", err)
			}
		case errors.Is(err, fs.ErrNotExist):
			return nil // nothing to remove under it
		case err != nil:
			return fmt.Errorf("checkpoint: restore: %w", err)
		case !fi.IsDir():
			return fmt.Errorf("checkpoint: restore %s: %s is not a directory", filepath.Join(root, filepath.FromSlash(rel)), dir)
		}
	}
	return nil
}
