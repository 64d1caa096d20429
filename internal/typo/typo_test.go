package typo

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"sesions", "sessions", 1}, {"hlep", "help", 1}, {"hello", "help", 2}, {"acp", "acp", 0},
		{"add", "acp", 2}, {"", "acp", 3}, {"acp", "", 3}, {"shcedule", "schedule", 1},
		{"ca", "abc", 3}, // optimal string alignment: a swapped pair is not edited again
		{"kitten", "sitting", 3}, {"modle", "model", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestDistanceCutsLongInputs(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	if got := Distance(long, long+"y"); got != 0 {
		t.Errorf("inputs past 64 bytes differ only beyond the cut, got %d", got)
	}
	if got := Distance(long, ""); got != maxLen {
		t.Errorf("Distance(10,000 bytes, \"\") = %d, want %d", got, maxLen)
	}
}

func TestNearest(t *testing.T) {
	names := []string{"model", "models", "provider", "level"}
	for _, tc := range []struct {
		word string
		max  int
		want string
	}{
		{"modle", 2, "model"}, // a swap
		{"provdier", 2, "provider"},
		{"models", 2, "models"}, // itself, when a caller folded its case
		{"zzzzz", 2, ""},        // nothing near
		{"lvl", 1, ""},          // two edits, one allowed
		{"lvel", 1, "level"},
		{"modelx", 1, "model"}, // equals: the first wins
	} {
		if got := Nearest(tc.word, names, tc.max); got != tc.want {
			t.Errorf("Nearest(%q, max %d) = %q, want %q", tc.word, tc.max, got, tc.want)
		}
	}
}
