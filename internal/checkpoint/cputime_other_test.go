//go:build !unix

package checkpoint_test

import (
	"time"
)

// processCPU is zero where there is no getrusage.
func processCPU() time.Duration { return 0 }
