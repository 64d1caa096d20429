package sandbox

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// signalCarrying kills each process not in signalled whose environment
// holds entry, adds it there, and returns how many it killed. The process
// is held by a pidfd before its environment is read, so a pid reused
// meanwhile is never signalled.
func signalCarrying(entry []byte, signalled map[int]bool) int {
	d, err := os.Open("/proc")
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	n := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 1 || pid == os.Getpid() || signalled[pid] {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err == nil && carries(env, entry) && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
			signalled[pid] = true
			n++
		}
		unix.Close(fd)
	}
	return n
}

// carries reports whether the NUL-separated environment env holds entry.
func carries(env, entry []byte) bool {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}
