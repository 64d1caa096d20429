package fstool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"meka.dev/meka/internal/sandbox"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"meka.dev/meka/tool"
)

// errBudget is the cause of a walk cut short by the search budget.
var errBudget = errors.New("search budget spent")

// walkDir walks dir depth-first in lexical order, calling visit for every
// entry that is not a directory. It skips .git and what the .gitignore
// files in force ignore, reading nested ones as it goes down. Symlinks
// are not followed. When only is set, it descends only toward and inside
// that directory. Unreadable directories are passed over, as grep -s
// does, and so is what hide (nil for none) reports hidden: meka's own
// data in the workspace. It stops at ctx's end or at the first error
// visit returns.
func walkDir(ctx context.Context, dir, only string, ign ignoreStack, hide func(string) bool, visit func(path string, d fs.DirEntry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, d := range entries {
		if d.Name() == ".gitignore" && d.Type().IsRegular() {
			ign = ign.push(loadIgnore(dir))
			break
		}
	}
	prefix := dir + string(filepath.Separator)
	if dir == string(filepath.Separator) {
		prefix = dir
	}
	for _, d := range entries {
		name := d.Name()
		if name == ".git" {
			continue
		}
		p := prefix + name
		isDir := d.IsDir()
		if len(ign) > 0 && ign.ignored(p, isDir) || hide != nil && hide(p) {
			continue
		}
		if isDir {
			if only != "" && !sandbox.Within(p, only) && !sandbox.Within(only, p) {
				continue
			}
			if err := walkDir(ctx, p, only, ign, hide, visit); err != nil {
				return err
			}
			continue
		}
		if only != "" && !sandbox.Within(p, only) {
			continue
		}
		if err := visit(p, d); err != nil {
			return err
		}
	}
	return nil
}

// relSlash is p relative to the directory start, with forward slashes.
func relSlash(start, p string) string {
	r := strings.TrimPrefix(p, start)
	r = strings.TrimPrefix(r, string(filepath.Separator))
	return filepath.ToSlash(r)
}

// globMatcher matches the glob of file_find and file_search's glob
// filter: a pattern with no slash matches file names at any depth (*.go);
// one with a slash matches the path from the directory searched
// (src/**/*.go). Only relative paths reach doublestar, so a root whose
// name holds glob metacharacters is taken literally.
type globMatcher struct {
	pattern string
	base    bool
}

func newGlob(pattern string) (*globMatcher, error) {
	p := filepath.ToSlash(pattern)
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	if p == "" {
		return nil, errors.New("the pattern is empty")
	}
	if !doublestar.ValidatePattern(p) {
		return nil, fmt.Errorf("%q is not a valid glob (unclosed [ or {?)", pattern)
	}
	return &globMatcher{pattern: p, base: !strings.Contains(p, "/")}, nil
}

func (g *globMatcher) match(rel, name string) bool {
	if g.base {
		return doublestar.MatchUnvalidated(g.pattern, name)
	}
	return doublestar.MatchUnvalidated(g.pattern, rel)
}

// prefix is the literal directory the pattern starts with ("" if none),
// so a walk need not enter others.
func (g *globMatcher) prefix() string {
	if g.base {
		return ""
	}
	base, _ := doublestar.SplitPattern(g.pattern)
	if base == "." || base == "/" {
		return ""
	}
	return filepath.FromSlash(base)
}

// splitAbsPattern splits an absolute glob into the directory to search and
// the pattern below it. A root named literally at its start is taken
// whole, metacharacters and all.
func splitAbsPattern(pattern string, roots []string) (string, string) {
	for _, r := range roots {
		if rest, ok := strings.CutPrefix(pattern, r+string(filepath.Separator)); ok {
			return r, rest
		}
	}
	base, rest := doublestar.SplitPattern(filepath.ToSlash(pattern))
	return filepath.FromSlash(base), rest
}

// target is one place a search walks.
type target struct {
	path string
	file bool
}

// targets resolves a search's explicit path, or lists the roots it sweeps
// without one, passing over roots that no longer exist. A result with
// IsError set means there is nothing to search.
func (e *env) targets(call tool.Call, path string) ([]target, []string, *tool.Result) {
	if path != "" {
		p, err := e.resolve(call, path, false)
		if err != nil {
			r := e.refusal(call, err)
			return nil, nil, &r
		}
		if !confined(call) {
			// Confined paths come back canonical; make these so too, since
			// the search opens files without following symlinks.
			if c, err := filepath.EvalSymlinks(p); err == nil {
				p = c
			}
		}
		fi, err := os.Stat(p)
		if err != nil {
			r := tool.Errorf("%s: %s does not exist.", call.Name, display(p, call.Cwd))
			if !errors.Is(err, fs.ErrNotExist) {
				r = tool.Errorf("%s: cannot search %s: %v", call.Name, display(p, call.Cwd), err)
			}
			return nil, nil, &r
		}
		return []target{{path: p, file: !fi.IsDir()}}, nil, nil
	}
	var out []target
	var notes []string
	for _, r := range e.rootsFor(call) {
		fi, err := os.Stat(r)
		if err != nil || !fi.IsDir() {
			notes = append(notes, fmt.Sprintf("Skipped the workspace root %s: it does not exist.", r))
			continue
		}
		out = append(out, target{path: r})
	}
	if len(out) == 0 {
		r := tool.Errorf("%s: the working directory %s does not exist, nor does any other workspace root.", call.Name, call.Cwd)
		return nil, nil, &r
	}
	return out, notes, nil
}

// budget bounds a walk by the search budget.
func (e *env) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, e.opts.SearchBudget, errBudget)
}

// rootsLeft describes the roots a stopped walk did not reach.
func rootsLeft(ts []target, reached []bool) (int, string) {
	var left []string
	for i, t := range ts {
		if !reached[i] {
			left = append(left, t.path)
		}
	}
	return len(left), strings.Join(left, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
