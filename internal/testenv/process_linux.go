package testenv

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Exited waits up to timeout for the process of pidfd fd to exit and
// reports whether it did. It polls the pidfd, so it returns as soon as
// the process is gone, with no sleep.
func Exited(t testing.TB, fd int, timeout time.Duration) bool {
	t.Helper()
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(timeout.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd: %v", err)
		}
		return n > 0
	}
}

// AssertGone fails t unless process pid exits within ten seconds: one
// still running then survived what should have ended it. A pid already
// reaped counts as gone.
func AssertGone(t testing.TB, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	if !Exited(t, fd, 10*time.Second) {
		t.Fatalf("process %d survived", pid)
	}
}
