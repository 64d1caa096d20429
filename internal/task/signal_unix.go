//go:build unix

package task

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName names a signal as the system does (SIGSEGV).
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
