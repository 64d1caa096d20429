package sandbox

import (
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Stamp is the identity of each directory on a canonical path at one
// moment: which inode each is, and, above the file's own directory, when
// it last changed. A directory renamed, or replaced by a symlink and put
// back, has a new inode or ctime; so has the directory that held it.
type Stamp struct {
	dirs []dirStamp
}

type dirStamp struct {
	dev, ino uint64
	ctime    unix.StatxTimestamp
}

// StampPath stamps the directories of the canonical path p from root (the
// writable root holding it: nothing above can be swapped from inside) to
// p's parent. The parent's ctime is left out: writing a new file there
// changes it by right.
func StampPath(p, root string) (Stamp, error) {
	var dirs []string
	for d := filepath.Dir(p); Within(d, root); d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(dirs)
	var s Stamp
	for i, d := range dirs {
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, d, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_CTIME, &st); err != nil {
			return Stamp{}, err
		}
		ds := dirStamp{dev: uint64(st.Dev_major)<<32 | uint64(st.Dev_minor), ino: st.Ino}
		if i < len(dirs)-1 {
			ds.ctime = st.Ctime
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			ds.ino = 0 // a symlink where a directory was: never equal
		}
		s.dirs = append(s.dirs, ds)
	}
	return s, nil
}

// Same reports whether nothing on the path changed between s and o.
func (s Stamp) Same(o Stamp) bool {
	return len(s.dirs) > 0 && slices.Equal(s.dirs, o.dirs) && !slices.ContainsFunc(s.dirs, func(d dirStamp) bool { return d.ino == 0 })
}
