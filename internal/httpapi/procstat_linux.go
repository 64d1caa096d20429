package httpapi

import (
	"os"
	"strconv"
	"strings"
)

// procStats reads the process's open files and resident memory from
// /proc/self, for GET /v1/runtime.
func procStats() (openFiles, rssBytes int64, ok bool) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, false
	}
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	// statm: size resident shared ..., in pages.
	f := strings.Fields(string(statm))
	if len(f) < 2 {
		return 0, 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	// ReadDir's own descriptor on /proc/self/fd is listed too.
	return int64(len(fds)) - 1, pages * int64(os.Getpagesize()), true
}
