package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
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

// LineFiles is a Files that can also read part of a file: limit lines
// from line (1-based), as an editor serves a range of its buffer.
type LineFiles interface {
	ReadFileLines(ctx context.Context, path string, line, limit int) ([]byte, error)
}

// ErrNotServed is the error a Files returns for a path it does not serve.
var ErrNotServed = errors.New("the front door does not serve this path")

// diskNote is said in the result of a write a front door did not serve.
const diskNote = "The editor does not serve this file, so it was written on disk: the change is not in the editor's buffer or its undo history."

// divergeNote is said in the result of a write made on disk for a front
// door whose client reads files for itself but leaves writing to meka.
const divergeNote = "The editor does not take writes from meka, so this was written on disk: an open editor buffer of this file now differs from it until the editor reloads the file."

// sessionFiles is the fstool.FS a session's file tools read and write
// through: the front door's Files once one is attached, else the disk. It
// chooses a call's route by its read, so an edit is written back where it
// was read from.
type sessionFiles struct {
	// roots are the session's workspace roots now: a new file inside them
	// is created through the front door.
	roots func() []string

	mu    sync.Mutex // guards files and diverges
	files Files
	// diverges says the front door's client holds buffers of files but
	// leaves writing them to meka (SetFilesDiverge).
	diverges bool
	// parent, a sub-agent's parent's, serves when nothing is attached
	// here: a sub-agent reads and writes through its parent's front door.
	parent *sessionFiles
}

var (
	_ fstool.Router   = (*sessionFiles)(nil)
	_ fstool.Confined = (*sessionFiles)(nil)
	_ fstool.Ranger   = (*sessionFiles)(nil)
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

// SetFilesDiverge says whether the front door's client holds buffers of
// the session's files that meka cannot write (an editor that serves reads
// but not writes). The file tools then read and write the disk, where an
// edit is computed from what lands, and a write's result says the
// editor's buffer now differs.
func (s *Session) SetFilesDiverge(on bool) {
	s.files.mu.Lock()
	s.files.diverges = on
	s.files.mu.Unlock()
}

func (s *sessionFiles) divergent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil && !s.diverges && s.parent != nil {
		return s.parent.divergent()
	}
	return s.diverges
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
		return editorWrite(ctx, f, path, data, roots)
	}
	return fstool.Disk{}.WriteFileIn(ctx, path, data, roots)
}

// ReadLines implements fstool.Ranger: a range is read through a front
// door that serves ranges, and the path; anything else is read whole.
func (s *sessionFiles) ReadLines(ctx context.Context, path string, line, limit int, roots *sandbox.Roots) ([]byte, bool, error) {
	lf, ok := s.attached().(LineFiles)
	if !ok {
		return nil, false, nil
	}
	if roots != nil {
		canon, err := roots.Resolve(path, "", false)
		if err != nil {
			return nil, false, err
		}
		path = canon
	}
	data, err := lf.ReadFileLines(ctx, path, line, limit)
	if errors.Is(err, ErrNotServed) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Route implements fstool.Router.
func (s *sessionFiles) Route(ctx context.Context, path string) ([]byte, fstool.Route, error) {
	f := s.attached()
	if f == nil {
		data, err := fstool.Disk{}.ReadFile(ctx, path)
		r := fstool.Route{FS: fstool.Disk{}}
		if s.divergent() {
			r.Note = divergeNote
		}
		return data, r, err
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
		if errors.Is(err, fs.ErrNotExist) && s.inRoots(path) {
			// A client answers the read of a file that does not exist yet
			// with ResourceNotFound too; creating it is still its business
			// (its write policy, its buffers). Only its ResourceNotFound on
			// the write sends the file to the disk. Outside the roots an
			// editor answers the write with an error of its own, so such a
			// file goes to the disk as before.
			return nil, fstool.Route{FS: &newFile{f: f}}, err
		}
		return data, fstool.Route{FS: fstool.Disk{}, Note: diskNote}, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, fstool.Route{FS: frontDoorFS{f}}, err
	}
	// Any other answer may come from a client that holds unsaved changes
	// of the file: the call fails rather than route around it, even for a
	// file the disk does not have, which the client may still be creating.
	return nil, fstool.Route{}, err
}

// inRoots reports whether path lies in one of the session's workspace
// roots.
func (s *sessionFiles) inRoots(path string) bool {
	if s.roots == nil {
		return false
	}
	for _, r := range s.roots() {
		if r != "" && (path == r || strings.HasPrefix(path, strings.TrimSuffix(r, string(filepath.Separator))+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

// newFile is the route of a file that exists nowhere yet: created through
// the front door, or on the disk when the front door answers the write
// ErrNotServed, which its Note then says. One per call.
type newFile struct {
	f Files

	mu     sync.Mutex // guards onDisk
	onDisk bool
}

var (
	_ fstool.Noter    = (*newFile)(nil)
	_ fstool.Confined = (*newFile)(nil)
)

func (n *newFile) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return fstool.Disk{}.ReadFile(ctx, path)
}

func (n *newFile) ReadFileIn(ctx context.Context, path string, roots *sandbox.Roots) ([]byte, error) {
	return fstool.Disk{}.ReadFileIn(ctx, path, roots)
}

func (n *newFile) WriteFile(ctx context.Context, path string, data []byte) error {
	return n.write(ctx, path, data, nil, func() error { return fstool.Disk{}.WriteFile(ctx, path, data) })
}

func (n *newFile) WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error {
	return n.write(ctx, path, data, roots, func() error { return fstool.Disk{}.WriteFileIn(ctx, path, data, roots) })
}

func (n *newFile) write(ctx context.Context, path string, data []byte, roots *sandbox.Roots, disk func() error) error {
	var err error
	if roots != nil {
		err = editorWrite(ctx, n.f, path, data, roots)
	} else {
		err = n.f.WriteFile(ctx, path, data)
	}
	if !errors.Is(err, ErrNotServed) {
		return err
	}
	if err := disk(); err != nil {
		return err
	}
	n.mu.Lock()
	n.onDisk = true
	n.mu.Unlock()
	return nil
}

// Note implements fstool.Noter.
func (n *newFile) Note() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.onDisk {
		return diskNote
	}
	return ""
}

// frontDoorFS is the route through the front door's Files.
type frontDoorFS struct{ f Files }

func (d frontDoorFS) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return d.f.ReadFile(ctx, path)
}

func (d frontDoorFS) WriteFile(ctx context.Context, path string, data []byte) error {
	return d.f.WriteFile(ctx, path, data)
}

var _ fstool.Confined = frontDoorFS{}

// ReadFileIn reads the canonical path through the front door, once it is
// known to lie in the roots.
func (d frontDoorFS) ReadFileIn(ctx context.Context, path string, roots *sandbox.Roots) ([]byte, error) {
	canon, err := roots.Resolve(path, "", false)
	if err != nil {
		return nil, err
	}
	return d.f.ReadFile(ctx, canon)
}

func (d frontDoorFS) WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error {
	return editorWrite(ctx, d.f, path, data, roots)
}

// ErrLandedOutside is what a front door's write that may have landed
// outside the writable roots matches with errors.Is.
var ErrLandedOutside = errors.New("the write may have landed outside the workspace")

// editorWrite hands the front door the canonical path, checked against
// the writable roots, and checks again once it has written: a symlink
// swapped in meanwhile may have sent the editor's write elsewhere, which
// the front door cannot tell. Such a write is reported, never a success.
func editorWrite(ctx context.Context, f Files, path string, data []byte, roots *sandbox.Roots) error {
	canon, err := roots.Resolve(path, "", true)
	if err != nil {
		return err
	}
	root := ""
	for _, w := range roots.Writable() {
		if sandbox.Within(canon, w) {
			root = w
			break
		}
	}
	before, err := sandbox.StampPath(canon, root)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.WriteFile(ctx, canon, data); err != nil {
		return err
	}
	// Where the path leads now, and whether a directory on it was swapped
	// meanwhile (even swapped back): any doubt is reported, never a
	// success. What the file holds says nothing: an editor may keep the
	// write in its buffer.
	landed, err := sandbox.Canonical(canon)
	if err != nil {
		return fmt.Errorf("check the editor's write of %s: %w", path, err)
	}
	if !roots.Contains(landed, true) {
		return fmt.Errorf("the editor wrote %s, but that path now leads to %s, outside the workspace (a symlink changed while it was written): %w", canon, landed, ErrLandedOutside)
	}
	after, err := sandbox.StampPath(canon, root)
	if err != nil || !before.Same(after) {
		return fmt.Errorf("the editor wrote %s, but a directory on that path changed while it was written: %w", canon, ErrLandedOutside)
	}
	return nil
}
