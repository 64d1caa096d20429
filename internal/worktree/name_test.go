package worktree

import (
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"fix-1", true},
		{"Feature_2.b", true},
		{"9", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-x", false},
		{".x", false},
		{"_x", false},
		{"../escape", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"a\n", false},
	} {
		if got := validName(tc.name); got != tc.ok {
			t.Errorf("validName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
