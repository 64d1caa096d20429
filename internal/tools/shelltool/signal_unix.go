//go:build unix

package shelltool

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func sysSignalName(s syscall.Signal) string { return unix.SignalName(s) }
