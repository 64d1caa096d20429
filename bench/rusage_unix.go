//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSSKB is a finished process's peak resident set, as getrusage says.
func maxRSSKB(ps *os.ProcessState) int64 { return ps.SysUsage().(*syscall.Rusage).Maxrss }
