//go:build !unix

package task

import (
	"fmt"
	"syscall"
)

// signalName names a signal by number where the system has no names.
func signalName(s syscall.Signal) string { return fmt.Sprintf("signal %d", int(s)) }
