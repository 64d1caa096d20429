package fstool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/tool"
)

// Disk is the local file system. Writes are atomic: the content goes to a
// temporary file in the target's directory, which is renamed over the
// target, keeping its mode.
type Disk struct{}

var (
	_ FS       = Disk{}
	_ Confined = Disk{}
)

// Confined is an FS that can read and write inside sandbox roots,
// checking the path again once the file is open, so that a symlink
// swapped in after the tools' own check cannot redirect the operation.
// The file tools use it below the unrestricted level when their roots are
// a *sandbox.Roots.
type Confined interface {
	ReadFileIn(ctx context.Context, path string, roots *sandbox.Roots) ([]byte, error)
	WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error
}

// ReadFileIn reads path, checked against roots after it is opened.
func (Disk) ReadFileIn(ctx context.Context, path string, roots *sandbox.Roots) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return sandbox.ReadFile(path, roots)
}

// WriteFileIn writes path atomically, keeping its mode, through a
// directory opened without following symlinks and checked against the
// writable roots.
func (Disk) WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return sandbox.WriteFileAtomic(path, data, roots)
}

// readFile reads p through f, inside the roots when the call is confined
// and f can be. The scratchpad lies outside the roots and is read as is.
func (e *env) readFile(ctx context.Context, call tool.Call, f FS, p string) ([]byte, error) {
	if err := checkRegular(p); err != nil {
		return nil, err
	}
	if c, ok := f.(Confined); ok {
		if r := e.sandboxRoots(call); r != nil && !e.isScratch(p) {
			return c.ReadFileIn(ctx, p, r)
		}
	}
	return f.ReadFile(ctx, p)
}

// writeFile writes p through f, inside the roots when the call is
// confined and f can be.
func (e *env) writeFile(ctx context.Context, call tool.Call, f FS, p string, data []byte) error {
	if err := checkRegular(p); err != nil {
		return err
	}
	if c, ok := f.(Confined); ok {
		if r := e.sandboxRoots(call); r != nil {
			return c.WriteFileIn(ctx, p, data, r)
		}
	}
	return f.WriteFile(ctx, p, data)
}

// openLocal opens p on the local disk for reading, inside the roots when
// the call is confined.
func (e *env) openLocal(call tool.Call, p string) (*os.File, error) {
	if err := checkRegular(p); err != nil {
		return nil, err
	}
	if r := e.sandboxRoots(call); r != nil && !e.isScratch(p) {
		return sandbox.Open(p, r)
	}
	return openRegular(p)
}

// ReadFile reads path from disk.
func (Disk) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// checkRegular refuses a path that exists and is not a regular file,
// naming what it is, before any FS (an editor's among them) is asked for
// it; the opens check again, against a swap.
func checkRegular(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // a missing file is the caller's to report
	}
	return sandbox.NotRegular("open", path, fi.Mode())
}

// openRegular opens path for reading and refuses anything but a regular
// file: the open does not block on a FIFO, and nothing is read from a
// FIFO, a device or a socket, which could block for ever.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, sandbox.NotRegular("read", path, fi.Mode())
	}
	// Reads of a regular file never block; the mode is only for the open.
	if err := setBlocking(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile writes data to path atomically, keeping an existing file's
// mode and creating missing parent directories for a new one. A symlink
// is written through: the file it names is replaced, not the link.
func (Disk) WriteFile(ctx context.Context, path string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return writeAtomic(path, data)
}

// newFileMode is the mode of a file a tool creates.
const newFileMode fs.FileMode = 0o644

func writeAtomic(path string, data []byte) (err error) {
	target := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		target = r
	}
	mode := newFileMode
	switch fi, err := os.Stat(target); {
	case err == nil:
		if !fi.Mode().IsRegular() {
			return sandbox.NotRegular("write", path, fi.Mode())
		}
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("write file: %w", err)
		}
	default:
		return fmt.Errorf("write file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".meka-*")
	if err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	// Chmod after creation: CreateTemp makes 0600 and the umask must not
	// narrow a mode the file already had.
	if err := tmp.Chmod(mode); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("write file: %w", err)
	}
	return nil
}

// isScratch reports whether p lies in the session's scratchpad.
func (e *env) isScratch(p string) bool {
	_, ok := e.inScratch(p)
	return ok
}
