package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrEscape is what every *EscapeError matches with errors.Is.
var ErrEscape = errors.New("path outside the workspace")

// Reasons an *EscapeError gives.
const (
	ReasonDotDot   = "its `..` leads out of the workspace"
	ReasonOutside  = "it is not under any workspace directory"
	ReasonSymlink  = "it is a symlink, or lies under one, that points out of the workspace"
	ReasonReadOnly = "it is in a read-only directory"
	ReasonChanged  = "it changed while it was being opened and now leads out of the workspace"
	ReasonProtect  = "it is meka's own configuration or data, or a repository's .git/hooks or .git/config, which stay read-only"
	ReasonHidden   = "it is meka's own data or configuration (its database, serve token, logs and other sessions' files), which tools neither read nor write"
)

// EscapeError is a path the roots refuse. Its message is written for the
// model: it says why and which directories it may use instead.
type EscapeError struct {
	Path   string
	Reason string
	// Writable and ReadOnly are the roots the model may use.
	Writable, ReadOnly []string
}

func (e *EscapeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "path %s is refused: %s. ", e.Path, e.Reason)
	if len(e.Writable) > 0 {
		fmt.Fprintf(&b, "You may read and write under %s", strings.Join(e.Writable, ", "))
	}
	if len(e.ReadOnly) > 0 {
		if len(e.Writable) > 0 {
			b.WriteString("; ")
		} else {
			b.WriteString("You may ")
		}
		fmt.Fprintf(&b, "read only under %s", strings.Join(e.ReadOnly, ", "))
	}
	b.WriteString(".")
	return b.String()
}

// Is makes errors.Is(err, ErrEscape) true.
func (e *EscapeError) Is(target error) bool { return target == ErrEscape }

// Roots is the set of directories a session may work in: the cwd and the
// additional writable directories, and the additional read-only ones. Every
// root is canonical (absolute, symlinks resolved). A root inside a root of
// the same or a stronger kind is dropped: a read-only root inside a
// writable one adds nothing, a writable root inside a read-only one stays
// writable. Roots is immutable and safe for concurrent use.
type Roots struct {
	cwd      string
	writable []string // cwd's root first
	readOnly []string
	// protected stay read-only inside the writable roots: each root's
	// .git/hooks and .git/config, and what Protect adds.
	protected []string
	// journal is where atomic writes note their temporary files.
	journal string
	// hidden are neither read nor written, but for visible inside them
	// (Hide).
	hidden, visible []string
}

// NewRoots canonicalises cwd and the additional directories. A directory
// that does not exist yet is kept, canonical as far as it exists.
func NewRoots(cwd string, writable, readOnly []string) (*Roots, error) {
	c, err := Canonical(cwd)
	if err != nil {
		return nil, fmt.Errorf("new roots: %w", err)
	}
	r := &Roots{cwd: c}
	var ws, ros []string
	for _, d := range append([]string{c}, writable...) {
		cd, err := Canonical(d)
		if err != nil {
			return nil, fmt.Errorf("new roots: %w", err)
		}
		ws = append(ws, cd)
	}
	for _, d := range readOnly {
		cd, err := Canonical(d)
		if err != nil {
			return nil, fmt.Errorf("new roots: %w", err)
		}
		ros = append(ros, cd)
	}
	r.writable = collapse(ws, nil)
	r.readOnly = collapse(ros, r.writable)
	for _, w := range r.writable {
		r.protected = append(r.protected, GitProtected(w)...)
	}
	return r, nil
}

// Protect returns roots under which paths (meka's config and data
// directories) are read-only too, canonicalised. A path that lies in no
// writable root protects nothing: one that holds a writable root (a
// worktree meka made under its data directory) leaves that root
// writable, as confined commands find it (Spec.Protected).
func (r *Roots) Protect(paths ...string) *Roots {
	c := *r
	c.protected = slices.Clone(r.protected)
	for _, p := range paths {
		if cp, err := Canonical(p); err == nil && under(cp, c.writable) && !slices.Contains(c.protected, cp) {
			c.protected = append(c.protected, cp)
		}
	}
	return &c
}

// Hide returns roots under which hidden (meka's data and config
// directories) are neither read nor written, but for visible inside them
// (the session's scratchpad, the skill directories), as confined
// commands do not see them (Spec.Masked). A hidden path that holds the
// cwd is not hidden: the user works there on purpose.
func (r *Roots) Hide(hidden, visible []string) *Roots {
	c := *r
	c.hidden, c.visible = nil, nil
	for _, p := range hidden {
		if cp, err := Canonical(p); err == nil && !Within(r.cwd, cp) {
			c.hidden = append(c.hidden, cp)
		}
	}
	for _, p := range visible {
		if cp, err := Canonical(p); err == nil {
			c.visible = append(c.visible, cp)
		}
	}
	return &c
}

// Hidden reports whether the canonical path p is hidden (Hide).
func (r *Roots) Hidden(p string) bool { return under(p, r.hidden) && !under(p, r.visible) }

// Protected returns the paths that stay read-only inside the writable
// roots.
func (r *Roots) Protected() []string { return slices.Clone(r.protected) }

// collapse drops duplicates and every dir under another dir of dirs or of
// stronger, keeping the order of the first occurrence.
func collapse(dirs, stronger []string) []string {
	var out []string
	for i, d := range dirs {
		covered := under(d, stronger)
		for j, o := range dirs {
			if i != j && Within(d, o) && (d != o || j < i) {
				covered = true
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out
}

// Within reports whether the clean path p is dir or lies inside it.
func Within(p, dir string) bool {
	if p == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

func under(p string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return Within(p, d) })
}

// Cwd returns the canonical cwd the roots were built with.
func (r *Roots) Cwd() string { return r.cwd }

// Writable returns the writable roots, the cwd's first.
func (r *Roots) Writable() []string { return slices.Clone(r.writable) }

// ReadOnly returns the read-only roots.
func (r *Roots) ReadOnly() []string { return slices.Clone(r.readOnly) }

// All returns every root, writable ones first: the order to search in.
func (r *Roots) All() []string { return append(r.Writable(), r.readOnly...) }

// Contains reports whether the canonical path p may be read (or, with
// write, written) under the roots.
func (r *Roots) Contains(p string, write bool) bool {
	if r.Hidden(p) {
		return false
	}
	if under(p, r.writable) {
		return !write || !under(p, r.protected)
	}
	return !write && under(p, r.readOnly)
}

// Resolve returns the canonical path that path names, relative paths
// resolving against cwd (the roots' cwd when empty), or an *EscapeError
// when it leads out of the roots, or, with write, out of the writable
// roots. The path need not exist: its deepest existing ancestor is
// resolved and the rest appended, and a dangling symlink is followed to
// where it would create its target.
//
// Resolve is a check at one moment; use the package's ReadFile, Open,
// OpenForWrite and WriteFileAtomic to act on the path, which check again
// after opening.
func (r *Roots) Resolve(path, cwd string, write bool) (string, error) {
	if cwd == "" {
		cwd = r.cwd
	}
	lexical := path
	if !filepath.IsAbs(path) {
		lexical = filepath.Join(cwd, path)
	}
	lexical = filepath.Clean(lexical)
	canon, err := Canonical(lexical)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	if r.Contains(canon, write) {
		return canon, nil
	}
	reason := ReasonOutside
	switch {
	case r.Hidden(canon) && (under(canon, r.writable) || under(canon, r.readOnly)):
		reason = ReasonHidden
	case under(canon, r.writable) && under(canon, r.protected):
		reason = ReasonProtect
	case r.Contains(canon, false):
		reason = ReasonReadOnly
	case r.Contains(lexical, false):
		reason = ReasonSymlink
	case !filepath.IsAbs(path) && slices.Contains(strings.Split(filepath.ToSlash(path), "/"), ".."):
		reason = ReasonDotDot
	}
	return "", r.escape(path, reason)
}

func (r *Roots) escape(path, reason string) *EscapeError {
	return &EscapeError{Path: path, Reason: reason, Writable: r.Writable(), ReadOnly: r.ReadOnly()}
}

// maxLinks bounds symlink expansion, as the kernel's ELOOP does.
const maxLinks = 40

// errLoop is returned for a path with too many levels of symlinks.
var errLoop = errors.New("too many levels of symbolic links")

// Canonical returns the absolute path p names with every symlink resolved.
// Unlike filepath.EvalSymlinks it accepts a path that does not exist: the
// missing tail is appended to its deepest existing ancestor, and a
// dangling symlink is followed to where writing through it would land.
func Canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("canonicalise %s: %w", p, err)
	}
	resolved := string(filepath.Separator)
	rest := split(abs)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing directory can be a symlink. A ".."
			// below it (from a link's target: the argument was cleaned)
			// cannot be resolved lexically, as the kernel would not
			// resolve it either.
			if slices.Contains(rest, "..") {
				return "", fmt.Errorf("canonicalise %s: %s: %w", p, next, fs.ErrNotExist)
			}
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("canonicalise %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("canonicalise %s: %w", p, errLoop)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("canonicalise %s: %w", p, err)
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		rest = append(split(target), rest...)
	}
	return resolved, nil
}

func split(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, string(filepath.Separator)) {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
