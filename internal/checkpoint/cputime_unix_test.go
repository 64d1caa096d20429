//go:build unix

package checkpoint_test

import (
	"syscall"
	"time"
)

// processCPU is the user and system time of this process and the
// processes it ran: on a loaded machine the wall time mostly measures the
// queue.
func processCPU() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}
