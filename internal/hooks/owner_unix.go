//go:build unix

package hooks

import (
	"os"
	"syscall"
)

// fileOwner is the uid owning a file, where the system says.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
