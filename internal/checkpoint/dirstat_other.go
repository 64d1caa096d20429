//go:build !linux && !darwin

package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"
)

// readDir lists a directory and stats its files and symlinks; with no
// change time or inode here, size, mtime and mode key the stat cache.
func readDir(abs string) ([]dirent, error) {
	des, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	out := make([]dirent, len(des))
	for i, d := range des {
		out[i] = dirent{name: d.Name(), typ: d.Type()}
		if d.Type()&^fs.ModeSymlink != 0 {
			continue
		}
		fi, err := d.Info()
		if err != nil {
			out[i].typ = fs.ModeIrregular
			continue
		}
		mode := uint32(modeFile)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			mode = modeLink
		case !fi.Mode().IsRegular():
			out[i].typ = fs.ModeIrregular
			continue
		case fi.Mode()&0o100 != 0:
			mode = modeExec
		}
		out[i].typ = fi.Mode().Type()
		out[i].st = statKey{mode: mode, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return out, nil
}

// statEntry stats one entry of a directory.
func statEntry(dir, name string) (dirent, error) {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return dirent{}, err
	}
	d := dirent{name: name, typ: fi.Mode().Type()}
	mode := uint32(modeFile)
	switch {
	case fi.IsDir():
		return d, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		mode = modeLink
	case !fi.Mode().IsRegular():
		d.typ = fs.ModeIrregular
		return d, nil
	case fi.Mode()&0o100 != 0:
		mode = modeExec
	}
	d.st = statKey{mode: mode, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	return d, nil
}
