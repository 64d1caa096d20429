//go:build !unix

package shelltool

import (
	"fmt"
	"syscall"
)

// sysSignalName names a signal by number where the system has no names.
func sysSignalName(s syscall.Signal) string { return fmt.Sprintf("signal %d", int(s)) }
