package fstool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		l = strings.TrimSuffix(l, "\n")
		if l != "" && !strings.HasPrefix(l, "(") {
			out = append(out, l)
		}
	}
	return out
}

func TestFindRespectsGitignore(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{
		".gitignore":             "*.log\nbuild/\n/top.txt\n!keep.log\n",
		"a.go":                   "",
		"top.txt":                "",
		"sub/top.txt":            "",
		"app.log":                "",
		"keep.log":               "",
		"build/out.go":           "",
		"sub/b.go":               "",
		"sub/.gitignore":         "gen_*.go\n!gen_keep.go\n",
		"sub/gen_x.go":           "",
		"sub/gen_keep.go":        "",
		"sub/deep/c.go":          "",
		"sub/deep/build/skip.go": "",
		".git/config":            "",
		".git/hooks/x.go":        "",
		"other/.gitignore":       "*\n",
		"other/hidden.go":        "",
	})
	h := newHarness(t, cwd, Options{})
	got := lines(text(h.ok("file_find", M{"pattern": "*"})))
	want := []string{".gitignore", "a.go", "keep.log", "sub/.gitignore", "sub/b.go", "sub/deep/c.go", "sub/gen_keep.go", "sub/top.txt"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("file_find *:\n got %v\nwant %v", got, want)
	}
	got = lines(text(h.ok("file_find", M{"pattern": "sub/**/*.go"})))
	want = []string{"sub/b.go", "sub/deep/c.go", "sub/gen_keep.go"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("file_find sub/**/*.go: %v", got)
	}
	// An explicit path inside the tree still honours the .gitignore above it
	// once the tree is a git work tree.
	got = lines(text(h.ok("file_find", M{"pattern": "*.go", "path": "sub/deep"})))
	if strings.Join(got, " ") != "sub/deep/c.go" {
		t.Fatalf("path inside a work tree: %v", got)
	}
	if got := text(h.ok("file_find", M{"pattern": "*.rs"})); !strings.Contains(got, `No files match "*.rs"`) {
		t.Fatalf("no match: %s", got)
	}
	if msg := h.refused("file_find", M{"pattern": "[a-"}); !strings.Contains(msg, "not a valid glob") {
		t.Fatalf("bad glob: %s", msg)
	}
}

func TestFindCountsEveryMatchAndBoundsTheList(t *testing.T) {
	cwd := tempDir(t)
	files := map[string]string{}
	for i := range 250 {
		files[fmt.Sprintf("d/f%03d.txt", i)] = ""
	}
	writeFiles(t, cwd, files)
	scratch := filepath.Join(tempDir(t), "scratch")
	h := newHarness(t, cwd, Options{ScratchDir: scratch})
	out := text(h.ok("file_find", M{"pattern": "*.txt"}))
	if got := lines(out); len(got) != 200 || got[0] != "d/f000.txt" || got[199] != "d/f199.txt" {
		t.Fatalf("listed %d: %v…", len(got), got[:3])
	}
	if !strings.Contains(out, "250 matches, showing 200") {
		t.Fatalf("count: %s", out[len(out)-200:])
	}
	entries, _ := os.ReadDir(scratch)
	if len(entries) != 1 || !strings.Contains(out, filepath.Join(scratch, entries[0].Name())) {
		t.Fatalf("scratch file not referenced: %v", entries)
	}
	full := readString(t, filepath.Join(scratch, entries[0].Name()))
	if n := strings.Count(full, "\n"); n != 250 || !strings.HasPrefix(entries[0].Name(), "file_find-20250301T120000-") {
		t.Fatalf("scratch list has %d lines (%s)", n, entries[0].Name())
	}
}

func TestFindAcrossRoots(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "app")
	writeFiles(t, base, map[string]string{
		"app/main.go":         "",
		"app/vendor/lib/v.go": "",
		"shared/util.go":      "",
		"notes[x]/n.go":       "",
		"notesx/decoy.go":     "",
		"2024*/star.go":       "",
		"2024-other/wrong.go": "",
		"ro/readonly.go":      "",
	})
	writable := []string{
		filepath.Join(base, "shared"),
		filepath.Join(cwd, "vendor"), // nested in cwd: collapsed
		filepath.Join(base, "notes[x]"),
		filepath.Join(base, "2024*"),
		filepath.Join(base, "gone"), // stale
	}
	if err := os.MkdirAll(filepath.Join(base, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	roots := newRoots(t, cwd, writable, []string{filepath.Join(base, "ro")})
	if err := os.Remove(filepath.Join(base, "gone")); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{Roots: roots})
	out := text(h.ok("file_find", M{"pattern": "*.go"}))
	got := lines(out)
	want := []string{
		"main.go", "vendor/lib/v.go",
		filepath.Join(base, "shared/util.go"),
		filepath.Join(base, "notes[x]/n.go"),
		filepath.Join(base, "2024*/star.go"),
		filepath.Join(base, "ro/readonly.go"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("roots:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "(6 matches)") || !strings.Contains(out, "Skipped the workspace root "+filepath.Join(base, "gone")+": it does not exist") {
		t.Fatalf("summary: %s", out)
	}
	// An absolute pattern that starts with a root takes the root literally.
	got = lines(text(h.ok("file_find", M{"pattern": filepath.Join(base, "notes[x]") + "/*.go"})))
	if strings.Join(got, " ") != filepath.Join(base, "notes[x]/n.go") {
		t.Fatalf("absolute pattern: %v", got)
	}
	got = lines(text(h.ok("file_find", M{"pattern": "*.go", "path": filepath.Join(base, "2024*")})))
	if strings.Join(got, " ") != filepath.Join(base, "2024*/star.go") {
		t.Fatalf("metacharacter path: %v", got)
	}
}
