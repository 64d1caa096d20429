//go:build !unix

package archive_test

import (
	"time"
)

// cpuTime is zero where there is no getrusage: the benchmarks report
// wall time only there.
func cpuTime() time.Duration { return 0 }
