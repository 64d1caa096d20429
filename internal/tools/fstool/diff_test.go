package fstool

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	cases := []struct {
		name, old, new, want string
	}{
		{"equal", "a\n", "a\n", ""},
		{"no newline at end", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"newline added", "a", "a\n", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"delete all", "a\nb\n", "", "--- a/f\n+++ b/f\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
			"1\nX\n3\n4\n5\n6\n7\n8\n9\n10\n11\nY\n",
			"--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+Y\n"},
		{"hunks merge within six lines",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			"1\nX\n3\n4\n5\n6\n7\nY\n9\n",
			"--- a/f\n+++ b/f\n@@ -1,9 +1,9 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n 9\n"},
	}
	for _, c := range cases {
		if got := UnifiedDiff("a/f", "b/f", c.old, c.new); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, got, c.want)
		}
	}
}

var hunkRe = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$`)

// applyDiff applies a unified diff made by UnifiedDiff, checking every
// context and removed line against old.
func applyDiff(old, diff string) (string, error) {
	if diff == "" {
		return old, nil
	}
	a := splitLines(old)
	var out []string
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return "", fmt.Errorf("bad headers")
	}
	pos := 0
	for i := 2; i < len(lines); {
		m := hunkRe.FindStringSubmatch(lines[i])
		if m == nil {
			return "", fmt.Errorf("line %d: not a hunk header: %q", i, lines[i])
		}
		start, _ := strconv.Atoi(m[1])
		n := 1
		if m[2] != "" {
			n, _ = strconv.Atoi(m[2])
		}
		if n > 0 {
			start--
		}
		if start < pos {
			return "", fmt.Errorf("hunks overlap")
		}
		out = append(out, a[pos:start]...)
		pos = start
		i++
		for ; i < len(lines) && !strings.HasPrefix(lines[i], "@@"); i++ {
			l := lines[i]
			body := l[1:] + "\n"
			if i+1 < len(lines) && lines[i+1] == `\ No newline at end of file` {
				body = l[1:]
			}
			switch l[0] {
			case ' ', '-':
				if pos >= len(a) || a[pos] != body {
					return "", fmt.Errorf("line %d: %q does not match old line %d", i, l, pos+1)
				}
				pos++
				if l[0] == ' ' {
					out = append(out, body)
				}
			case '+':
				out = append(out, body)
			case '\\':
			default:
				return "", fmt.Errorf("line %d: bad line %q", i, l)
			}
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, ""), nil
}

func TestDiffApplies(t *testing.T) {
	texts := []string{
		"", "a", "a\n", "a\nb\nc\n", "c\nb\na\n", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "x\na\nb\ny\nc\nd\nz", "a\na\na\nb\na\na\n",
		numbered(1, 50), strings.Replace(numbered(1, 50), "line 25\n", "", 1) + "tail",
	}
	for _, old := range texts {
		for _, new := range texts {
			d := UnifiedDiff("a/f", "b/f", old, new)
			got, err := applyDiff(old, d)
			if err != nil || got != new {
				t.Fatalf("diff %q -> %q does not apply (%v):\n%s", old, new, err, d)
			}
		}
	}
}

func TestDiffMinimal(t *testing.T) {
	old := numbered(1, 1000)
	new := strings.Replace(old, "line 500\n", "line five hundred\n", 1)
	d := UnifiedDiff("a", "b", old, new)
	if add, rem := DiffStat(d); add != 1 || rem != 1 {
		t.Fatalf("stat +%d -%d:\n%s", add, rem, d)
	}
	// Past the edit distance bound the diff is coarse but still applies.
	var a, b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	d = UnifiedDiff("a", "b", a.String(), b.String())
	if got, err := applyDiff(a.String(), d); err != nil || got != b.String() {
		t.Fatalf("coarse diff does not apply: %v", err)
	}
}

func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\n")
	f.Add("x", "x\n")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\nX\n4\n5\n6\n7\n8\nY\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		d := UnifiedDiff("a/f", "b/f", old, new)
		got, err := applyDiff(old, d)
		if err != nil || got != new {
			t.Fatalf("diff does not apply (%v):\n%s", err, d)
		}
	})
}
