package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrNotRegular refuses a path that is not a regular file (a FIFO, a
// device, a socket, a directory): reading one could block for ever.
var ErrNotRegular = errors.New("not a regular file")

// NotRegular is the error op on path gives when path is of mode m, not a
// regular file: ErrNotRegular, saying what it is.
func NotRegular(op, path string, m fs.FileMode) error {
	return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, fileType(m))}
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
