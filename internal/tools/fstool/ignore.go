package fstool

import (
	"os"
	"path/filepath"
	"strings"

	gitignore "github.com/sabhiram/go-gitignore"
)

// ignoreRule is one line of a .gitignore file. Each line is compiled on
// its own so that negations can be applied in order, later lines and
// deeper files winning, as git applies them.
type ignoreRule struct {
	m      *gitignore.GitIgnore
	negate bool
}

// ignoreFile is the rules of one .gitignore and the directory they are
// relative to.
type ignoreFile struct {
	dir   string // absolute, clean
	rules []ignoreRule
}

func parseIgnore(dir string, data []byte) *ignoreFile {
	f := &ignoreFile{dir: dir}
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		neg := false
		if strings.HasPrefix(t, "!") {
			neg, t = true, t[1:]
		} else if strings.HasPrefix(t, `\!`) || strings.HasPrefix(t, `\#`) {
			t = t[1:]
		}
		f.rules = append(f.rules, ignoreRule{m: gitignore.CompileIgnoreLines(t), negate: neg})
	}
	if len(f.rules) == 0 {
		return nil
	}
	return f
}

func loadIgnore(dir string) *ignoreFile {
	data, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	return parseIgnore(dir, data)
}

// ignoreStack is the .gitignore files in force in one directory, outermost
// first. It is immutable: a subdirectory pushes onto a copy.
type ignoreStack []*ignoreFile

func (s ignoreStack) push(f *ignoreFile) ignoreStack {
	if f == nil {
		return s
	}
	out := make(ignoreStack, len(s), len(s)+1)
	copy(out, s)
	return append(out, f)
}

// ignored reports whether the entry at abs is ignored.
func (s ignoreStack) ignored(abs string, isDir bool) bool {
	ig := false
	for _, f := range s {
		rel := strings.TrimPrefix(abs, f.dir)
		rel = strings.TrimPrefix(rel, string(filepath.Separator))
		rel = filepath.ToSlash(rel)
		for _, r := range f.rules {
			if r.m.MatchesPath(rel) || isDir && r.m.MatchesPath(rel+"/") {
				ig = !r.negate
			}
		}
	}
	return ig
}

// ancestorIgnores returns the .gitignore files that apply to start from
// above it: those between the enclosing git work tree's top (the nearest
// ancestor holding .git) and start's parent. Outside a work tree there
// are none, as git would apply none.
func ancestorIgnores(start string) ignoreStack {
	var dirs []string
	top := ""
	for d := filepath.Dir(start); ; d = filepath.Dir(d) {
		if d == start {
			break
		}
		dirs = append(dirs, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
			break
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if _, err := os.Lstat(filepath.Join(start, ".git")); err == nil || top == "" {
		return nil
	}
	var s ignoreStack
	for i := len(dirs) - 1; i >= 0; i-- {
		s = s.push(loadIgnore(dirs[i]))
	}
	return s
}
