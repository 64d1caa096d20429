// Package credential is the one rule for which environment variables are
// credentials: the sandbox strips them from commands' environments and
// the config refuses an env_passthrough glob that would pass one. It is a
// leaf, so both can import it.
package credential

import (
	"path"
	"strings"
)

// Suffixes are the name patterns stripped whatever the profiles say:
// *_API_KEY, *_TOKEN and *_SECRET, compared without regard to case. The
// list keeps to these three on purpose: a wider net (say *_PASSWORD,
// *_KEY) also takes variables commands need, and the names a profile
// declares are stripped exactly anyway.
var Suffixes = []string{"_API_KEY", "_TOKEN", "_SECRET"}

// Name reports whether the variable name ends in one of Suffixes.
func Name(name string) bool {
	upper := strings.ToUpper(name)
	for _, s := range Suffixes {
		if strings.HasSuffix(upper, s) {
			return true
		}
	}
	return false
}

// GlobPasses reports whether the glob (path.Match syntax, already
// checked) matches a variable that is stripped: one of names (the
// profiles' key variables) or any name Name takes for a credential. It
// returns such a name as the example to give: one of names, else the
// shortest credential it matches.
func GlobPasses(glob string, names []string) (string, bool) {
	for _, n := range names {
		if ok, _ := path.Match(glob, n); ok {
			return n, true
		}
	}
	toks := parse(glob)
	best := ""
	for _, s := range Suffixes {
		if w, ok := search(toks, s); ok && (best == "" || len(w) < len(best)) {
			best = w
		}
	}
	return best, best != ""
}

// alphabet are the bytes the search builds names of: those of variable
// names as shells and programs write them.
const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz0123456789-."

// token is one element of a glob: a star, or a byte any of set matches.
type token struct {
	star bool
	set  func(c byte) bool
}

// parse splits a valid glob into tokens.
func parse(glob string) []token {
	var out []token
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			out = append(out, token{star: true})
		case '?':
			out = append(out, token{set: func(b byte) bool { return b != '/' }})
		case '[':
			i++
			negate := i < len(glob) && glob[i] == '^'
			if negate {
				i++
			}
			var ranges [][2]byte
			for first := true; i < len(glob) && (first || glob[i] != ']'); first = false {
				lo := glob[i]
				if lo == '\\' && i+1 < len(glob) {
					i++
					lo = glob[i]
				}
				hi := lo
				if i+2 < len(glob) && glob[i+1] == '-' && glob[i+2] != ']' {
					i += 2
					hi = glob[i]
					if hi == '\\' && i+1 < len(glob) {
						i++
						hi = glob[i]
					}
				}
				ranges = append(ranges, [2]byte{lo, hi})
				i++
			}
			out = append(out, token{set: func(b byte) bool {
				in := false
				for _, r := range ranges {
					in = in || r[0] <= b && b <= r[1]
				}
				return in != negate && b != '/'
			}})
		default:
			if c == '\\' && i+1 < len(glob) {
				i++
				c = glob[i]
			}
			out = append(out, token{set: func(b byte) bool { return b == c }})
		}
	}
	return out
}

// search looks, breadth first, for the shortest name toks match that ends
// in suffix (without regard to case): a walk over pairs of a position in
// toks and how much of suffix the name so far ends with.
func search(toks []token, suffix string) (string, bool) {
	type state struct{ i, j int }
	type node struct {
		state
		name string
	}
	seen := map[state]bool{{0, 0}: true}
	queue := []node{{state{0, 0}, ""}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.i == len(toks) {
			if n.j == len(suffix) {
				return n.name, true
			}
			continue
		}
		push := func(s state, name string) {
			if !seen[s] {
				seen[s] = true
				queue = append(queue, node{s, name})
			}
		}
		t := toks[n.i]
		if t.star {
			push(state{n.i + 1, n.j}, n.name)
		}
		for k := 0; k < len(alphabet); k++ {
			c := alphabet[k]
			if t.star || t.set(c) {
				next := n.i + 1
				if t.star {
					next = n.i
				}
				push(state{next, advance(suffix, n.j, c)}, n.name+string(c))
			}
		}
	}
	return "", false
}

// advance returns how much of suffix a name ends with once c follows a
// name that ended with suffix[:j]: the longest prefix of suffix that is
// a suffix of suffix[:j]+c, upper-cased.
func advance(suffix string, j int, c byte) int {
	s := strings.ToUpper(suffix[:j] + string(c))
	for k := min(len(s), len(suffix)); k > 0; k-- {
		if s[len(s)-k:] == suffix[:k] {
			return k
		}
	}
	return 0
}
