package host

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/tools/fstool"
)

// Files is where a front door serves a session's file contents from, such
// as an editor's buffers. Implementations must be safe for concurrent use.
type Files interface {
	// ReadFile reads path. An error matching ErrNotServed means the front
	// door does not serve this path: the call reads it, and writes it back,
	// on the local disk instead. Any other error fails the call, since the
	// front door may hold unsaved changes the disk does not have.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces path's content, creating the file if need be.
	WriteFile(ctx context.Context, path string, data []byte) error
}

// ErrNotServed is the error a Files returns for a path it does not serve.
var ErrNotServed = errors.New("the front door does not serve this path")

// diskNote is said in the result of a write a front door did not serve.
const diskNote = "The editor does not serve this file, so it was written on disk: the change is not in the editor's buffer or its undo history."

// sessionFiles is the fstool.FS a session's file tools read and write
// through: the front door's Files once one is attached, else the disk. It
// chooses a call's route by its read, so an edit is written back where it
// was read from.
type sessionFiles struct {
	mu    sync.Mutex // guards files
	files Files
	// parent, a sub-agent's parent's, serves when nothing is attached
	// here: a sub-agent reads and writes through its parent's front door.
	parent *sessionFiles
}

var (
	_ fstool.Router   = (*sessionFiles)(nil)
	_ fstool.Confined = (*sessionFiles)(nil)
)

func (s *sessionFiles) attached() Files {
	s.mu.Lock()
	f := s.files
	s.mu.Unlock()
	if f == nil && s.parent != nil {
		return s.parent.attached()
	}
	return f
}

// SetFiles routes the session's file reads and writes through f; nil
// routes them to the local disk.
func (s *Session) SetFiles(f Files) {
	s.files.mu.Lock()
	s.files.files = f
	s.files.mu.Unlock()
}

func (s *sessionFiles) ReadFile(ctx context.Context, path string) ([]byte, error) {
	data, _, err := s.Route(ctx, path)
	return data, err
}

func (s *sessionFiles) ReadFileIn(ctx context.Context, path string, roots *sandbox.Roots) ([]byte, error) {
	f := s.attached()
	if f == nil {
		return fstool.Disk{}.ReadFileIn(ctx, path, roots)
	}
	data, err := f.ReadFile(ctx, path)
	if errors.Is(err, ErrNotServed) {
		return fstool.Disk{}.ReadFileIn(ctx, path, roots)
	}
	return data, err
}

func (s *sessionFiles) WriteFile(ctx context.Context, path string, data []byte) error {
	if f := s.attached(); f != nil {
		return f.WriteFile(ctx, path, data)
	}
	return fstool.Disk{}.WriteFile(ctx, path, data)
}

func (s *sessionFiles) WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error {
	if f := s.attached(); f != nil {
		return f.WriteFile(ctx, path, data)
	}
	return fstool.Disk{}.WriteFileIn(ctx, path, data, roots)
}

// Route implements fstool.Router.
func (s *sessionFiles) Route(ctx context.Context, path string) ([]byte, fstool.Route, error) {
	f := s.attached()
	if f == nil {
		data, err := fstool.Disk{}.ReadFile(ctx, path)
		return data, fstool.Route{FS: fstool.Disk{}}, err
	}
	return s.route(ctx, f, path)
}

func (s *sessionFiles) route(ctx context.Context, f Files, path string) ([]byte, fstool.Route, error) {
	data, err := f.ReadFile(ctx, path)
	switch {
	case err == nil:
		return data, fstool.Route{FS: frontDoorFS{f}}, nil
	case errors.Is(err, ErrNotServed):
		data, err := fstool.Disk{}.ReadFile(ctx, path)
		return data, fstool.Route{FS: fstool.Disk{}, Note: diskNote}, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, fstool.Route{FS: frontDoorFS{f}}, err
	}
	// A front door may answer a file that exists nowhere with an error of
	// its own; one the disk does not have either is a new file, written
	// through the front door.
	if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
		return nil, fstool.Route{FS: frontDoorFS{f}}, fs.ErrNotExist
	}
	return nil, fstool.Route{}, err
}

// frontDoorFS is the route through the front door's Files.
type frontDoorFS struct{ f Files }

func (d frontDoorFS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return d.f.ReadFile(ctx, path)
}

func (d frontDoorFS) WriteFile(ctx context.Context, path string, data []byte) error {
	return d.f.WriteFile(ctx, path, data)
}
