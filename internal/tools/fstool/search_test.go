package fstool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/tool"
)

func TestSearchOutput(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{
		".gitignore":   "ignored/\n",
		"a.go":         "package a\n// TODO: one\nfunc A() {}\n",
		"b/b.txt":      "nothing\nTODO two\r\n",
		"b/c.go":       "x\n\n\n// todo lower\n// TODO: three",
		"ignored/i.go": "// TODO hidden\n",
		".git/HEAD":    "TODO in git\n",
		"bin.dat":      "TODO\x00binary\n",
		"long.txt":     "TODO " + strings.Repeat("é", 400) + "\n",
	})
	if err := os.Symlink(filepath.Join(cwd, "a.go"), filepath.Join(cwd, "z-link.go")); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{})
	out := text(h.ok("file_search", M{"pattern": "TODO"}))
	want := "a.go:2:// TODO: one\nb/b.txt:2:TODO two\nb/c.go:5:// TODO: three\nlong.txt:1:TODO " + strings.Repeat("é", 147) + "…\n(4 matches in 4 files)"
	if out != want {
		t.Fatalf("search:\n%s\nwant:\n%s", out, want)
	}
	out = text(h.ok("file_search", M{"pattern": "(?i)^// todo", "glob": "*.go"}))
	if want := "a.go:2:// TODO: one\nb/c.go:4:// todo lower\nb/c.go:5:// TODO: three\n(3 matches in 2 files)"; out != want {
		t.Fatalf("glob and flags:\n%s", out)
	}
	out = text(h.ok("file_search", M{"pattern": "TODO", "path": "b/c.go"}))
	if want := "b/c.go:5:// TODO: three\n(1 match in 1 file)"; out != want {
		t.Fatalf("one file:\n%s", out)
	}
	if out := text(h.at(3).ok("file_search", M{"pattern": "TODO", "path": "z-link.go"})); !strings.HasPrefix(out, "a.go:2:// TODO: one\n") {
		t.Fatalf("symlinked file at unrestricted: %s", out)
	}
	if out := text(h.ok("file_search", M{"pattern": "FIXME"})); !strings.Contains(out, `No matches for "FIXME"`) {
		t.Fatalf("no match: %s", out)
	}
	if msg := h.refused("file_search", M{"pattern": "a("}); !strings.Contains(msg, "RE2") {
		t.Fatalf("bad pattern: %s", msg)
	}
	if msg := h.refused("file_search", M{"pattern": "a", "path": "nope"}); !strings.Contains(msg, "does not exist") {
		t.Fatalf("missing path: %s", msg)
	}
}

// multiRoot makes cwd and two more roots with n1, n2, n3 matching files.
func multiRoot(t *testing.T, n1, n2, n3 int) (string, []string) {
	base := tempDir(t)
	files := map[string]string{}
	for i, n := range []int{n1, n2, n3} {
		for j := range n {
			files[fmt.Sprintf("r%d/f%03d.txt", i, j)] = fmt.Sprintf("x\nneedle %d/%d\n", i, j)
		}
	}
	writeFiles(t, base, files)
	for i := range 3 {
		if err := os.MkdirAll(filepath.Join(base, fmt.Sprintf("r%d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(base, "r0"), []string{filepath.Join(base, "r1"), filepath.Join(base, "r2")}
}

func TestSearchCapNamesUnsearchedRoots(t *testing.T) {
	cwd, more := multiRoot(t, 150, 10, 10)
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil), Workers: 8})
	out := text(h.ok("file_search", M{"pattern": "needle"}))
	got := lines(out)
	if len(got) != 100 {
		t.Fatalf("%d matches shown, want 100", len(got))
	}
	for i, l := range got {
		if want := fmt.Sprintf("f%03d.txt:2:needle 0/%d", i, i); l != want {
			t.Fatalf("match %d = %q, want %q: the cap must keep the first matches in walk order", i, l, want)
		}
	}
	if !strings.Contains(out, "100-match cap") || !strings.Contains(out, "2 roots of 3 went unsearched: "+more[0]+", "+more[1]) {
		t.Fatalf("cap note:\n%s", out[strings.LastIndex(out, "\n("):])
	}

	// The cap falls in the second root: only the third went unsearched.
	cwd, more = multiRoot(t, 60, 60, 10)
	h = newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil)})
	out = text(h.ok("file_search", M{"pattern": "needle"}))
	if !strings.Contains(out, "1 root of 3 went unsearched: "+more[1]+".") {
		t.Fatalf("cap in the second root:\n%s", out[strings.LastIndex(out, "\n("):])
	}
	if got := lines(out); got[60] != more[0]+"/f000.txt:2:needle 1/0" {
		t.Fatalf("second root's first match: %q", got[60])
	}

	// Exactly at the cap nothing is cut.
	cwd, more = multiRoot(t, 100, 0, 0)
	h = newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil)})
	if out := text(h.ok("file_search", M{"pattern": "needle"})); !strings.HasSuffix(out, "(100 matches in 100 files)") {
		t.Fatalf("exactly 100: %s", out[len(out)-80:])
	}
}

func TestSearchScratchpad(t *testing.T) {
	cwd, more := multiRoot(t, 150, 10, 10)
	scratch := filepath.Join(tempDir(t), "s")
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil), ScratchDir: scratch})
	out := text(h.ok("file_search", M{"pattern": "needle", "scratchpad": true}))
	entries, err := os.ReadDir(scratch)
	if err != nil || len(entries) != 1 {
		t.Fatalf("scratch dir: %v %v", entries, err)
	}
	p := filepath.Join(scratch, entries[0].Name())
	if !strings.HasPrefix(out, "170 matches in 170 files; all of them are in the scratchpad file "+p) {
		t.Fatalf("result: %.200s", out)
	}
	if got := lines(out); len(got) != 1+scratchHead {
		t.Fatalf("head has %d lines", len(got)-1)
	}
	all := strings.Split(strings.TrimSuffix(readString(t, p), "\n"), "\n")
	if len(all) != 170 || all[0] != "f000.txt:2:needle 0/0" || all[169] != more[1]+"/f009.txt:2:needle 2/9" {
		t.Fatalf("scratch file: %d lines, %q … %q", len(all), all[0], all[len(all)-1])
	}
	// And the model may read it back at the workspace level.
	if got := text(h.ok("file_read", M{"path": p, "limit": 1})); !strings.Contains(got, "needle 0/0") {
		t.Fatalf("read back: %s", got)
	}
}

func TestSearchStaleRoot(t *testing.T) {
	cwd, more := multiRoot(t, 1, 1, 1)
	roots := newRoots(t, cwd, more, nil)
	if err := os.RemoveAll(more[0]); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{Roots: roots})
	out := text(h.ok("file_search", M{"pattern": "needle"}))
	if !strings.Contains(out, "f000.txt:2:needle 0/0\n"+more[1]+"/f000.txt:2:needle 2/0\n") ||
		!strings.Contains(out, "Skipped the workspace root "+more[0]+": it does not exist") {
		t.Fatalf("stale root:\n%s", out)
	}
	for _, r := range append(more, cwd) {
		os.RemoveAll(r)
	}
	if msg := h.refused("file_search", M{"pattern": "needle"}); !strings.Contains(msg, "does not exist") {
		t.Fatalf("no root left: %s", msg)
	}
}

func TestSearchRootWithGlobMetacharacters(t *testing.T) {
	base := tempDir(t)
	writeFiles(t, base, map[string]string{
		"app/a.txt":      "needle app\n",
		"notes[x]/n.txt": "needle literal\n",
		"notesx/n.txt":   "needle decoy\n",
		"2024*/s.txt":    "needle star\n",
		"2024-01/s.txt":  "needle decoy\n",
		"{a,b}/c.txt":    "needle brace\n",
		"a/c.txt":        "needle decoy\n",
	})
	cwd := filepath.Join(base, "app")
	more := []string{filepath.Join(base, "notes[x]"), filepath.Join(base, "2024*"), filepath.Join(base, "{a,b}")}
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil)})
	out := text(h.ok("file_search", M{"pattern": "needle", "glob": "*.txt"}))
	want := "a.txt:1:needle app\n" +
		more[0] + "/n.txt:1:needle literal\n" +
		more[1] + "/s.txt:1:needle star\n" +
		more[2] + "/c.txt:1:needle brace\n(4 matches in 4 files)"
	if out != want {
		t.Fatalf("metacharacter roots:\n%s\nwant:\n%s", out, want)
	}
	out = text(h.ok("file_search", M{"pattern": "needle", "path": more[0]}))
	if !strings.HasPrefix(out, more[0]+"/n.txt:1:needle literal\n(1 match") {
		t.Fatalf("metacharacter path: %s", out)
	}
}

func TestSearchBudget(t *testing.T) {
	cwd, more := multiRoot(t, 5, 5, 5)
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, more, nil), SearchBudget: time.Nanosecond})
	out := text(h.ok("file_search", M{"pattern": "needle"}))
	if !strings.Contains(out, "stopped after its 1ns budget") || !strings.Contains(out, "3 roots of 3 went unsearched") {
		t.Fatalf("budget:\n%s", out)
	}
	out = text(h.ok("file_find", M{"pattern": "*"}))
	if !strings.Contains(out, "stopped after its 1ns budget") {
		t.Fatalf("find budget:\n%s", out)
	}
}

func TestSearchCanceled(t *testing.T) {
	cwd, _ := multiRoot(t, 5, 0, 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tl := NewSearch(Options{})
	_, err := tl.Run(ctx, tool.Call{Name: "file_search", Arguments: []byte(`{"pattern":"needle"}`), Cwd: cwd, Level: 2})
	if err == nil {
		t.Fatal("a canceled call returned no error")
	}
}

func TestSearchOrderIsStable(t *testing.T) {
	cwd, _ := multiRoot(t, 300, 0, 0)
	var first string
	for i := range 5 {
		h := newHarness(t, cwd, Options{Workers: 1 + i*4, SearchCap: 250})
		out := text(h.ok("file_search", M{"pattern": "needle"}))
		if i == 0 {
			first = out
		} else if out != first {
			t.Fatalf("run %d differs", i)
		}
	}
}

func TestMatcherLines(t *testing.T) {
	data := "alpha\nbeta gamma\r\n\nfoo\nbar foo\nbaz"
	cases := []struct {
		pattern string
		limit   int
		want    string
	}{
		{"foo", 0, "4:foo 5:bar foo"},
		{"^foo", 0, "4:foo"},
		{"foo$", 0, "4:foo 5:bar foo"},
		{"gamma$", 0, ""}, // grep: the \r is part of the line
		{`a\s+b`, 0, ""},  // never across lines
		{`\Afoo`, 0, "4:foo"},
		{`baz\z`, 0, "6:baz"},
		{"^$", 0, "3:"},
		{"[^x]+", 2, "1:alpha 2:beta gamma"},
		{"a", 3, "1:alpha 2:beta gamma 5:bar foo"},
		{`(?s)alpha.beta`, 0, ""},
		{`\bfoo\b`, 0, "4:foo 5:bar foo"},
	}
	for _, c := range cases {
		m, err := newMatcher(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		m.lines([]byte(data), c.limit, func(n int, line []byte) { got = append(got, fmt.Sprintf("%d:%s", n, line)) })
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q: got %q, want %q", c.pattern, strings.Join(got, " "), c.want)
		}
	}
}

func FuzzMatcherLines(f *testing.F) {
	f.Add("a\nb\nab\n", "a.?b")
	f.Add("x\r\ny", `^y$`)
	f.Add("foo\n\nbar", `^`)
	f.Fuzz(func(t *testing.T, data, pattern string) {
		m, err := newMatcher(pattern)
		if err != nil {
			return
		}
		var got []string
		m.lines([]byte(data), 0, func(n int, line []byte) { got = append(got, fmt.Sprintf("%d:%s", n, line)) })
		// The reference: each line on its own, as grep reads them.
		re := regexp.MustCompile(pattern)
		var want []string
		for i, l := range strings.Split(strings.TrimSuffix(data, "\n"), "\n") {
			if data == "" {
				break
			}
			if re.MatchString(l) {
				want = append(want, fmt.Sprintf("%d:%s", i+1, strings.TrimSuffix(l, "\r")))
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("pattern %q on %q:\n got %q\nwant %q", pattern, data, got, want)
		}
	})
}
