//go:build !linux

package httpapi

// procStats is known only where /proc/self is (Linux); elsewhere GET
// /v1/runtime leaves open_files and rss_bytes out.
func procStats() (openFiles, rssBytes int64, ok bool) { return 0, 0, false }
