package plan

import (
	"strings"
	"unicode/utf8"
)

// Clamp cuts s to at most n bytes on a UTF-8 boundary.
func Clamp(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// OneLine puts s on one line, each line break a blank, so an item renders
// as one row.
func OneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// Plural picks the word for n things: one or many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
