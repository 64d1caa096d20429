//go:build unix

package postgres

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists on this
// machine. Signal 0 checks without sending anything; EPERM means the
// process exists under another user. A pid that is not a single process
// (0 and negatives name process groups) is taken as alive, so the lease
// decides.
func processAlive(pid int) bool {
	if pid <= 0 {
		return true
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
