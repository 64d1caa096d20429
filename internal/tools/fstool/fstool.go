// Package fstool owns meka's built-in file tools: file_read, file_write,
// file_edit, file_find and file_search, and diagnostics when given a
// Diagnoser (a language server's view of a changed file, which
// file_write and file_edit add to their results). It enforces the workspace roots
// itself below the unrestricted level (canonical paths, no escapes through
// ".." or symlinks, read-only roots refused for writes), records every
// change as a unified diff, and offloads large results to the session's
// scratchpad.
//
// Files are read and written through an FS, so a front door can serve them
// from an editor's buffers; Disk is the local implementation.
//
// It imports tool, permission, model and internal/sandbox only.
package fstool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"time"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Roots is the workspace confinement the file tools consult below the
// unrestricted level. Implementations must be safe for concurrent use.
type Roots interface {
	// Resolve returns the canonical absolute form of path (relative paths
	// resolve against cwd; symlinks are resolved, through the nearest
	// existing ancestor for a path that does not exist yet), or an error
	// if it lies outside the roots: outside every root for a read, outside
	// the writable roots for a write.
	Resolve(path, cwd string, write bool) (string, error)
	// All returns the roots a search without an explicit path sweeps, as
	// absolute paths in order.
	All() []string
}

// FS is where the file tools read and write file contents. Errors for a
// file that does not exist match fs.ErrNotExist. Implementations must be
// safe for concurrent use.
type FS interface {
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// WriteFile replaces the file's content, keeping its mode, or creates
	// it (and its missing parent directories).
	WriteFile(ctx context.Context, path string, data []byte) error
}

// A Route is how one call reaches one file.
type Route struct {
	// FS serves the call's write, so an edit lands where it was read from.
	FS FS
	// Note is said in the result of a write through this route, such as
	// "the editor's buffer was not updated".
	Note string
}

// A Noter is a route's FS whose note is known only once it has written,
// such as a new file the editor declined to create, written on disk. Its
// Note, when not empty, replaces the Route's.
type Noter interface {
	Note() string
}

// note is what a write through r says in its result.
func (r Route) note() string {
	if n, ok := r.FS.(Noter); ok {
		if s := n.Note(); s != "" {
			return s
		}
	}
	return r.Note
}

// Ranger is an FS that may serve part of a text file: limit lines from
// line (1-based), as an editor's fs/read_text_file does, so that a read
// of a few lines does not move the whole file. served is false when it
// does not serve this file in ranges, and nothing was read; roots, when
// not nil, confine the read as Confined's do.
type Ranger interface {
	ReadLines(ctx context.Context, path string, line, limit int, roots *sandbox.Roots) (data []byte, served bool, err error)
}

// Router is an FS that serves a file from one of several places (an
// editor's buffer, else the local disk). file_edit and file_write call
// Route once per call and write through the route the read took.
type Router interface {
	FS
	// Route reads path. For a file that does not exist it returns an error
	// matching fs.ErrNotExist together with the route a new file is
	// written through.
	Route(ctx context.Context, path string) ([]byte, Route, error)
}

// Defaults for Options' zero values.
const (
	DefaultSearchBudget  = 60 * time.Second
	DefaultMaxImageBytes = 5 << 20
	DefaultReadLimit     = 2000
	DefaultSearchCap     = 100
	DefaultFindCap       = 200
)

// Options configure the file tools of one session. The zero value of each
// field means its default.
type Options struct {
	// Roots confines paths below the unrestricted level; a *sandbox.Roots
	// also makes local reads and writes check again once the file is
	// open. Nil confines paths to the call's cwd.
	Roots Roots
	// FS reads and writes file contents; nil is Disk. Images and searches
	// are always read from the local disk.
	FS FS
	// Vision reports whether the session's model can see images; nil
	// means it cannot.
	Vision func() bool
	// ScratchDir is the session's scratchpad, where large results go. It
	// is readable at every level. Empty: large results are cut instead.
	ScratchDir string
	// Now names scratchpad files; nil is time.Now.
	Now func() time.Time
	// SearchBudget bounds the walk of one file_find or file_search call,
	// shared by every root it sweeps.
	SearchBudget time.Duration
	// MaxImageBytes caps an image file_read returns.
	MaxImageBytes int64
	// SearchCap is how many matches file_search returns without a
	// scratchpad; FindCap how many paths file_find prints.
	SearchCap, FindCap int
	// Workers bounds the files file_search reads at once; zero picks a
	// number from GOMAXPROCS.
	Workers int
	// Diagnostics, when set, adds a changed file's errors and warnings to
	// file_write's and file_edit's results and offers the diagnostics
	// tool.
	Diagnostics Diagnoser
}

// New returns the file tools: file_read, file_write, file_edit, file_find
// and file_search, and diagnostics when Options.Diagnostics is set.
func New(opts Options) []tool.Tool {
	e := newEnv(opts)
	tools := []tool.Tool{&ReadTool{e}, &WriteTool{e}, &EditTool{e}, &FindTool{e}, &SearchTool{e}}
	if opts.Diagnostics != nil {
		tools = append(tools, &DiagnosticsTool{e})
	}
	return tools
}

// env is what the tools of one session share.
type env struct {
	opts Options
	fs   FS
}

func newEnv(o Options) *env {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SearchBudget <= 0 {
		o.SearchBudget = DefaultSearchBudget
	}
	if o.MaxImageBytes <= 0 {
		o.MaxImageBytes = DefaultMaxImageBytes
	}
	if o.SearchCap <= 0 {
		o.SearchCap = DefaultSearchCap
	}
	if o.FindCap <= 0 {
		o.FindCap = DefaultFindCap
	}
	e := &env{opts: o, fs: o.FS}
	if e.fs == nil {
		e.fs = Disk{}
	}
	return e
}

func (e *env) vision() bool { return e.opts.Vision != nil && e.opts.Vision() }

// PathError is a path a call may not touch at its level, or one that
// cannot be resolved.
type PathError struct {
	Op   string // "read" or "write"
	Path string
	Err  error
}

func (e *PathError) Error() string { return e.Op + " " + e.Path + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

var _ Roots = (*sandbox.Roots)(nil)

// absPath makes p absolute against cwd, lexically.
func absPath(p, cwd string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// confined reports whether the call's paths are confined to the roots.
func confined(call tool.Call) bool { return call.Level < permission.Unrestricted }

// roots returns the roots that confine call: Options.Roots, or the cwd
// alone when none were given.
func (e *env) roots(call tool.Call) (Roots, error) {
	if e.opts.Roots != nil {
		return e.opts.Roots, nil
	}
	return sandbox.NewRoots(call.Cwd, nil, nil)
}

// hider reports what a confined call's walks pass over (Roots.Hidden, for
// roots that hide anything); nil for none.
func (e *env) hider(call tool.Call) func(string) bool {
	if !confined(call) {
		return nil
	}
	r, err := e.roots(call)
	if err != nil {
		return nil
	}
	if h, ok := r.(interface{ Hidden(p string) bool }); ok {
		return h.Hidden
	}
	return nil
}

// sandboxRoots returns the roots as the sandbox's own type, for the reads
// and writes that check again once the file is open; nil when the
// call is not confined or the roots are some other implementation.
func (e *env) sandboxRoots(call tool.Call) *sandbox.Roots {
	if !confined(call) {
		return nil
	}
	r, err := e.roots(call)
	if err != nil {
		return nil
	}
	sr, _ := r.(*sandbox.Roots)
	return sr
}

// resolve turns a path argument into the path the call may touch, or a
// refusal. At unrestricted any path goes; below it the roots decide, and
// the scratchpad is readable as well.
func (e *env) resolve(call tool.Call, p string, write bool) (string, error) {
	op := "read"
	if write {
		op = "write"
	}
	if p == "" {
		return "", &PathError{Op: op, Path: p, Err: errors.New("path is empty")}
	}
	if !confined(call) {
		return absPath(p, call.Cwd), nil
	}
	roots, err := e.roots(call)
	if err != nil {
		return "", &PathError{Op: op, Path: p, Err: err}
	}
	got, err := roots.Resolve(p, call.Cwd, write)
	if err == nil {
		return got, nil
	}
	if !write {
		if c, ok := e.inScratch(absPath(p, call.Cwd)); ok {
			return c, nil
		}
	}
	return "", &PathError{Op: op, Path: p, Err: err}
}

// callLevel is what a call naming a path needs: unrestricted when the
// path lies outside the workspace roots (and, for a read, outside the
// readable roots and the scratchpad), else the tool's own level.
func (e *env) callLevel(call tool.Call, own permission.Level, write bool) permission.Level {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(call.Arguments, &a) != nil || a.Path == "" {
		return own
	}
	call.Level = min(call.Level, permission.Workspace) // resolve as a confined call would
	if _, err := e.resolve(call, a.Path, write); errors.Is(err, sandbox.ErrEscape) {
		return permission.Unrestricted
	}
	return own
}

// inScratch reports whether abs lies in the session's scratchpad,
// symlinks resolved, and returns its canonical path.
func (e *env) inScratch(abs string) (string, bool) {
	if e.opts.ScratchDir == "" {
		return "", false
	}
	c, err := sandbox.Canonical(abs)
	if err != nil {
		return "", false
	}
	sd, err := sandbox.Canonical(e.opts.ScratchDir)
	return c, err == nil && sandbox.Within(c, sd)
}

// refusal is the result for a path the call may not touch.
func (e *env) refusal(call tool.Call, err error) tool.Result {
	var pe *PathError
	if !errors.As(err, &pe) {
		return tool.Errorf("%s: %v", call.Name, err)
	}
	if pe.Path == "" {
		return tool.Errorf("%s: path is empty; pass the file's path.", call.Name)
	}
	if errors.Is(err, sandbox.ErrEscape) {
		return tool.Errorf("%s refused at the %s permission level: %v Use a path inside those directories, or ask the user to raise the level to unrestricted.", call.Name, call.Level, pe.Err)
	}
	return tool.Errorf("%s: cannot %s %s: %v", call.Name, pe.Op, pe.Path, pe.Err)
}

// rootsFor lists the roots a search sweeps, cwd first, overlaps collapsed.
func (e *env) rootsFor(call tool.Call) []string {
	list := []string{filepath.Clean(call.Cwd)}
	if e.opts.Roots != nil {
		for _, r := range e.opts.Roots.All() {
			list = append(list, filepath.Clean(r))
		}
	}
	return collapseRoots(list)
}

// collapseRoots drops repeats and roots nested inside another; an outer
// root takes the earliest place of the roots it swallows.
func collapseRoots(list []string) []string {
	var out []string
	for _, r := range list {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		covered := false
		for _, o := range out {
			if sandbox.Within(r, o) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		// r may contain roots already kept: r replaces the first, the
		// others go.
		placed := false
		kept := out[:0:0]
		for _, o := range out {
			if sandbox.Within(o, r) {
				if !placed {
					kept = append(kept, r)
					placed = true
				}
				continue
			}
			kept = append(kept, o)
		}
		if !placed {
			kept = append(kept, r)
		}
		out = kept
	}
	return out
}

// display is how a path is shown to the model: relative to cwd when
// inside it, else absolute.
func display(p, cwd string) string {
	if cwd != "" && sandbox.Within(p, filepath.Clean(cwd)) {
		if rel, err := filepath.Rel(cwd, p); err == nil {
			return rel
		}
	}
	return p
}

// decode unmarshals call arguments, returning a result the model can act
// on when they do not fit.
func decode(call tool.Call, v any) (tool.Result, bool) {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return tool.Errorf("%s: arguments do not decode: %v", call.Name, err), false
	}
	return tool.Result{}, true
}

// stringArg pulls a string argument out of raw arguments, for titles and
// locations; it tolerates arguments that do not decode.
func stringArg(args json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}

func title(name string, args json.RawMessage, key string) string {
	if v := stringArg(args, key); v != "" {
		return name + " " + v
	}
	return name
}

func pathLocation(args json.RawMessage, cwd string) []tool.Location {
	p := stringArg(args, "path")
	if p == "" {
		return nil
	}
	return []tool.Location{{Path: absPath(p, cwd)}}
}
