//go:build linux || darwin

package checkpoint

import (
	"io/fs"
	"os"

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
		mode := uint32(modeFile)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			mode = modeLink
		case unix.S_IFREG:
			if st.Mode&0o100 != 0 {
				mode = modeExec
			}
		default:
			out[i].typ = fs.ModeIrregular // replaced since listed
			continue
		}
		mt, ct := times(&st)
		out[i].typ = 0
		if mode == modeLink {
			out[i].typ = fs.ModeSymlink
		}
		out[i].st = statKey{mode: mode, size: st.Size, mtime: mt, ctime: ct, ino: uint64(st.Ino)}
	}
	return out, nil
}
