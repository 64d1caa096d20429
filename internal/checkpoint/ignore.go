package checkpoint

import (
	"bytes"
	"strings"
)

// The root's .gitignore files decide what a snapshot leaves out, as git
// decides it for a work tree whose top is the root: the files from the
// root down to an entry's directory, the deeper file and the later line
// winning; an ignored directory is not entered, so nothing under it can
// be included again. Matching is git's wildmatch (the tests hold it to
// git's own answers). The maintained Go matchers use path.Match-style
// globbing, which differs from git's on "[!...]", escapes and "**".

// ignorePattern is one line of a .gitignore.
type ignorePattern struct {
	pat      string
	negate   bool
	dirOnly  bool
	basename bool // no slash: matched against the entry's name alone
}

// ignoreFile is one .gitignore, with the directory it sits in (relative
// to the root, slash-separated, "" for the root).
type ignoreFile struct {
	dir      string
	patterns []ignorePattern
}

func parseIgnore(dir string, data []byte) *ignoreFile {
	f := &ignoreFile{dir: dir}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\r")
		line = trimTrailingSpaces(line)
		if line == "" || line[0] == '#' {
			continue
		}
		p := ignorePattern{}
		if line[0] == '!' {
			p.negate, line = true, line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		if line == "" {
			continue
		}
		if !strings.Contains(line, "/") {
			p.basename = true
		} else {
			line = strings.TrimPrefix(line, "/")
		}
		p.pat = line
		f.patterns = append(f.patterns, p)
	}
	if len(f.patterns) == 0 {
		return nil
	}
	return f
}

// trimTrailingSpaces drops trailing spaces not escaped with a backslash.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		// Count the backslashes before this space: an odd number
		// escapes it.
		n := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// ignoreStack is the .gitignore files in force in one directory,
// outermost first. It is never changed: a subdirectory pushes onto a copy.
type ignoreStack []*ignoreFile

func (s ignoreStack) push(f *ignoreFile) ignoreStack {
	if f == nil {
		return s
	}
	out := make(ignoreStack, len(s), len(s)+1)
	copy(out, s)
	return append(out, f)
}

// ignored says whether the entry at rel (relative to the root,
// slash-separated) with the given name is ignored: the last matching
// line of the deepest file that has one decides.
func (s ignoreStack) ignored(rel, name string, isDir bool) bool {
	for i := len(s) - 1; i >= 0; i-- {
		f := s[i]
		sub := rel
		if f.dir != "" {
			sub = rel[len(f.dir)+1:]
		}
		for j := len(f.patterns) - 1; j >= 0; j-- {
			p := &f.patterns[j]
			if p.dirOnly && !isDir {
				continue
			}
			var m bool
			if p.basename {
				m = wildmatch(p.pat, name, false)
			} else {
				m = wildmatch(p.pat, sub, true)
			}
			if m {
				return !p.negate
			}
		}
	}
	return false
}

// wildmatch is git's wildmatch: "?" and "*" do not match "/" when
// pathname is set, "**" between slashes matches any number of
// directories, "[...]" (negated by "!" or "^") is a class, and "\"
// quotes the next character.
func wildmatch(pat, text string, pathname bool) bool {
	return dowild(pat, text, pathname) == wmMatch
}

const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

func dowild(p, text string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pc := p[pi]
		if ti >= len(text) && pc != '*' {
			return wmAbortAll
		}
		var tc byte
		if ti < len(text) {
			tc = text[ti]
		}
		switch pc {
		case '\\':
			pi++
			if pi >= len(p) || tc != p[pi] {
				return wmNoMatch
			}
		case '?':
			if pathname && tc == '/' {
				return wmNoMatch
			}
		case '*':
			pi++
			matchSlash := !pathname
			if pi < len(p) && p[pi] == '*' {
				prev := pi - 2
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				if !pathname {
					matchSlash = true
				} else if (prev < 0 || p[prev] == '/') &&
					(pi == len(p) || p[pi] == '/' || (p[pi] == '\\' && pi+1 < len(p) && p[pi+1] == '/')) {
					// "**/" may match no directory at all.
					if pi < len(p) && p[pi] == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			}
			if pi == len(p) {
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && p[pi] == '/' {
				// One "*" then "/": the rest of this directory's name.
				sl := strings.IndexByte(text[ti:], '/')
				if sl < 0 {
					return wmNoMatch
				}
				ti += sl
				// The loop's increments consume the slash on both sides.
				continue
			}
			for {
				if ti >= len(text) {
					break
				}
				if r := dowild(p[pi:], text[ti:], pathname); r != wmNoMatch {
					if !matchSlash || r != wmAbortToStarStar {
						return r
					}
				} else if !matchSlash && text[ti] == '/' {
					return wmAbortToStarStar
				}
				ti++
			}
			return wmAbortAll
		case '[':
			pi++
			if pi >= len(p) {
				return wmAbortAll
			}
			negated := false
			if p[pi] == '!' || p[pi] == '^' {
				negated = true
				pi++
			}
			matched := false
			var prev byte
			first := true
			for {
				if pi >= len(p) {
					return wmAbortAll
				}
				c := p[pi]
				if c == ']' && !first {
					break
				}
				first = false
				switch {
				case c == '\\':
					pi++
					if pi >= len(p) {
						return wmAbortAll
					}
					c = p[pi]
					if tc == c {
						matched = true
					}
				case c == '-' && prev != 0 && pi+1 < len(p) && p[pi+1] != ']':
					pi++
					hi := p[pi]
					if hi == '\\' {
						pi++
						if pi >= len(p) {
							return wmAbortAll
						}
						hi = p[pi]
					}
					if tc >= prev && tc <= hi {
						matched = true
					}
					c = 0
				case c == '[' && pi+1 < len(p) && p[pi+1] == ':':
					// The class ends at the first "]", which ":" must
					// precede; otherwise the "[" is a literal.
					end := strings.IndexByte(p[pi+2:], ']')
					if end < 0 {
						return wmAbortAll
					}
					if end < 1 || p[pi+2+end-1] != ':' {
						if tc == '[' {
							matched = true
						}
						break
					}
					class := p[pi+2 : pi+2+end-1]
					pi += 2 + end
					m, ok := inClass(class, tc)
					if !ok {
						return wmAbortAll
					}
					if m {
						matched = true
					}
					c = 0
				default:
					if tc == c {
						matched = true
					}
				}
				prev = c
				pi++
			}
			if matched == negated || (pathname && tc == '/') {
				return wmNoMatch
			}
		default:
			if tc != pc {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// inClass answers "[:class:]"; ok is false for a class git does not know.
func inClass(class string, c byte) (m, ok bool) {
	switch class {
	case "alnum":
		return isAlpha(c) || isDigit(c), true
	case "alpha":
		return isAlpha(c), true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit(c), true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return c >= 'a' && c <= 'z', true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c), true
	case "space":
		return c == ' ' || c >= '\t' && c <= '\r', true
	case "upper":
		return c >= 'A' && c <= 'Z', true
	case "xdigit":
		return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F', true
	}
	return false, false
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
