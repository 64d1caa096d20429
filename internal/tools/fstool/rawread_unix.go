//go:build unix

package fstool

import (
	"errors"

	"golang.org/x/sys/unix"
)

// errTooBig is returned by readRaw for a file past the search limit.
var errTooBig = errors.New("file too large to search")

// readRaw reads the regular file at p into buf (reused), with as few
// system calls as a file allows: open, read until a short read, close.
// os.Open would also register the descriptor with the poller and set
// its blocking mode, which costs more than the read for small files.
// O_NOFOLLOW refuses a file swapped for a symlink since the walk saw it;
// O_NONBLOCK keeps a FIFO swapped in from blocking.
func readRaw(p string, buf []byte, limit int) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return buf[:0], err
	}
	defer unix.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return buf[:0], errTooBig
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf[:0], err
		}
		room := cap(buf) - len(buf)
		buf = buf[:len(buf)+n]
		// A short read of a regular file is its end.
		if n == 0 || n < room {
			if len(buf) > limit {
				return buf[:0], errTooBig
			}
			return buf, nil
		}
	}
}
