package checkpoint_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/internal/checkpoint"
)

// What a snapshot leaves out is what git leaves out: nested .gitignore
// files, negation (and none under an excluded directory), anchoring,
// "**", classes and escapes, checked against git's own answer for the
// same tree.
func TestIgnoredAsGitIgnores(t *testing.T) {
	needGit(t)
	root := t.TempDir()
	files := map[string]string{
		".gitignore": strings.Join([]string{
			"# build output",
			"*.o",
			"build/",
			"!build/keep.o",
			"/root-only.txt",
			"docs/**/*.tmp",
			"**/cache",
			"a/**/b.txt",
			"[!a]x.log",
			"[^b]y.log",
			"n[0-9].dat",
			`\#hash`,
			`\!bang`,
			"trail   ",
			"foo/*",
			"!foo/bar",
			"logs/",
			"/deep/*/x.c",
			"*.[ch]pp",
			"[[:digit:]]z",
			"end/**",
			"",
		}, "\n"),
		"main.c": "", "main.o": "", "build/out.bin": "", "build/keep.o": "",
		"root-only.txt": "", "sub/root-only.txt": "",
		"docs/x.tmp": "", "docs/a/b/y.tmp": "", "docs/a/y.md": "",
		"cache/c1": "", "p/q/cache/c2": "", "p/q/cached": "",
		"a/b.txt": "", "a/x/y/b.txt": "", "a/c.txt": "",
		"ax.log": "", "zx.log": "", "by.log": "", "zy.log": "",
		"n1.dat": "", "nx.dat": "", "#hash": "", "!bang": "", "trail": "",
		"foo/bar": "", "foo/baz": "", "foo/sub/x": "",
		"logs":         "a file, not the directory logs/ names",
		"deep/one/x.c": "", "deep/one/two/x.c": "", "deep/x.c": "",
		"k.cpp": "", "k.hpp": "", "k.xpp": "", "1z": "", "az": "",
		"end/f": "", "end/g/h": "", "endless": "",
		// A nested file: its own rules, deeper ones winning.
		"sub/.gitignore": "!*.o\n*.txt\n!keep.txt\n/only-here\n",
		"sub/lib.o":      "", "sub/notes.txt": "", "sub/keep.txt": "",
		"sub/only-here": "", "sub/inner/only-here": "",
		"sub/inner/deeper.o":   "",
		"sub/inner/.gitignore": "deeper.o\n",
		"sub/cache/x":          "",
	}
	for p, body := range files {
		write(t, filepath.Join(root, filepath.FromSlash(p)), body)
	}
	s := open(t, root, checkpoint.Options{})
	p, err := s.Snapshot(context.Background(), "s", 1, checkpoint.KindBefore)
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkpoint.Files(s, p, root)
	if err != nil {
		t.Fatal(err)
	}

	// git's answer, for the same tree as a work tree of its own.
	gitDir := filepath.Join(t.TempDir(), "git")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir=" + gitDir, "--work-tree=" + root}, args...)...)
		cmd.Env = append(cmd.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	git("init", "-q")
	var want []string
	for _, f := range strings.Split(git("ls-files", "-z", "--others", "--exclude-standard"), "\x00") {
		if f != "" {
			want = append(want, f)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("recorded:\n%s\ngit would record:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(got) < 15 {
		t.Fatalf("only %d files recorded: %v", len(got), got)
	}
	for _, ignored := range []string{"main.o", "build/keep.o", "sub/notes.txt", "end/f"} {
		if slices.Contains(got, ignored) {
			t.Errorf("%s recorded", ignored)
		}
	}
}

// git's wildmatch cases, from its own test suite's table (t3070), with
// WM_PATHNAME as .gitignore patterns containing a slash use it.
func TestWildmatch(t *testing.T) {
	for _, c := range []struct {
		pat, text string
		want      bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"???", "foo", true},
		{"*f", "foo", false},
		{"*", "foo", true},
		{"foo/*", "foo/bar", true},
		{"foo/*", "foo/bar/baz", false},
		{"foo/**", "foo/bar/baz", true},
		{"**/foo", "foo", true},
		{"**/foo", "x/y/foo", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**b", "a/x/b", false},
		{"[ab]", "a", true},
		{"[!ab]", "a", false},
		{"[^ab]", "c", true},
		{"[a-c]x", "bx", true},
		{"[]]", "]", true},
		{"[!]]", "a", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"[[:alpha:]]", "q", true},
		{"[[:digit:]]", "q", false},
		{"a?b", "a/b", false},
		{"*/foo", "a/b/foo", false},
		{"**/*.c", "x/y/z.c", true},
		{"*.c", "x/z.c", false},
	} {
		if got := checkpoint.Wildmatch(c.pat, c.text); got != c.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", c.pat, c.text, got, c.want)
		}
	}
}
