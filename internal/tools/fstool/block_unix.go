//go:build unix

package fstool

import (
	"os"
	"syscall"
)

// setBlocking clears O_NONBLOCK, which the open set so that a FIFO
// cannot hang it.
func setBlocking(f *os.File) error { return syscall.SetNonblock(int(f.Fd()), false) }
