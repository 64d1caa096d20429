//go:build !unix

package postgres_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
