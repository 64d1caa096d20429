package fstool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
	if r := e.sandboxRoots(call); r != nil && !e.isScratch(p) {
		return sandbox.Open(p, r)
	}
	return os.Open(p)
}

// ReadFile reads path from disk.
func (Disk) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
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
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("not a regular file")}
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
