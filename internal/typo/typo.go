// Package typo measures how far a mistyped word is from the names it may
// have meant, so that errors can say "did you mean".
package typo

// maxLen bounds the work: inputs are single words or key names, and a
// longer one is no typo of them.
const maxLen = 64

// Distance counts the insertions, deletions, substitutions and swaps of
// adjacent bytes that turn a into b (optimal string alignment), so "hlep"
// is one edit from "help". Both are cut at 64 bytes.
func Distance(a, b string) int {
	a, b = a[:min(len(a), maxLen)], b[:min(len(b), maxLen)]
	// Three rows of the table: the one before last is needed for swaps.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Nearest returns the candidate closest to word, at most maxDist edits
// away, or "" when none is; the first of equals wins.
func Nearest(word string, candidates []string, maxDist int) string {
	best, bestDist := "", maxDist+1
	for _, c := range candidates {
		if d := Distance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}
