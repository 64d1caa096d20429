//go:build !unix

package fstool

import "os"

// setBlocking has nothing to clear where opens never set O_NONBLOCK.
func setBlocking(*os.File) error { return nil }
