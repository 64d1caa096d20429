//go:build !unix

package fstool

import (
	"testing"
	"time"
)

// processCPU is zero where there is no getrusage.
func processCPU(b *testing.B) time.Duration { return 0 }
