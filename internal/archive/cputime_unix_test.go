//go:build unix

package archive_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system time: on a machine shared
// with other work, the wall time of an op says more about the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
