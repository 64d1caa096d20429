//go:build linux || darwin

package checkpoint

import (
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// readDir lists a directory and stats its files and symlinks relative to
// the open directory: one path component for the kernel to resolve per
// file instead of the whole path, and no allocation per stat.
func readDir(abs string) ([]dirent, error) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	out := make([]dirent, len(des))
	var st unix.Stat_t
	for i, d := range des {
		out[i] = dirent{name: d.Name(), typ: d.Type()}
		if t := d.Type(); t&^fs.ModeSymlink != 0 {
			continue // directories and special files: no stat needed
		}
		if err := unix.Fstatat(fd, d.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			out[i].typ = fs.ModeIrregular // gone since listed
			continue
		}
		out[i] = direntOf(d.Name(), &st)
	}
	return out, nil
}

// statEntry stats one entry of a directory.
func statEntry(dir, name string) (dirent, error) {
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
		return dirent{}, err
	}
	return direntOf(name, &st), nil
}

func direntOf(name string, st *unix.Stat_t) dirent {
	d := dirent{name: name}
	mode := uint32(modeFile)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		d.typ = fs.ModeDir
		return d
	case unix.S_IFLNK:
		mode = modeLink
		d.typ = fs.ModeSymlink
	case unix.S_IFREG:
		if st.Mode&0o100 != 0 {
			mode = modeExec
		}
	default:
		d.typ = fs.ModeIrregular
		return d
	}
	mt, ct := times(st)
	d.st = statKey{mode: mode, size: st.Size, mtime: mt, ctime: ct, ino: uint64(st.Ino)}
	d.linked = mode != modeLink && uint64(st.Nlink) > 1
	return d
}
