//go:build !unix

package sqlite_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
