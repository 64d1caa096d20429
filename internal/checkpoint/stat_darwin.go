package checkpoint

import "golang.org/x/sys/unix"

func times(st *unix.Stat_t) (mtime, ctime int64) {
	return st.Mtim.Nano(), st.Ctim.Nano()
}
