package fstool

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteCreatesAndReplaces(t *testing.T) {
	cwd := tempDir(t)
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, nil, nil)})

	r := h.ok("file_write", M{"path": "pkg/new.go", "content": "package pkg\n\nfunc A() {}\n"})
	if got := readString(t, filepath.Join(cwd, "pkg/new.go")); got != "package pkg\n\nfunc A() {}\n" {
		t.Fatalf("content: %q", got)
	}
	if text(r) != "Created pkg/new.go (3 lines)." {
		t.Fatalf("result: %s", text(r))
	}
	wantDiff := "--- /dev/null\n+++ b/pkg/new.go\n@@ -0,0 +1,3 @@\n+package pkg\n+\n+func A() {}\n"
	if r.Change != wantDiff {
		t.Fatalf("diff:\n%s\nwant\n%s", r.Change, wantDiff)
	}
	var st ChangeState
	if err := json.Unmarshal(r.State, &st); err != nil || st != (ChangeState{Path: filepath.Join(cwd, "pkg/new.go"), Created: true, Added: 3}) {
		t.Fatalf("state %s: %+v", r.State, st)
	}
	fi, _ := os.Stat(filepath.Join(cwd, "pkg/new.go"))
	if fi.Mode().Perm()&0o600 != 0o600 {
		t.Fatalf("new file mode %v", fi.Mode())
	}

	r = h.ok("file_write", M{"path": "pkg/new.go", "content": "package pkg\n\nfunc B() {}\n"})
	wantDiff = "--- a/pkg/new.go\n+++ b/pkg/new.go\n@@ -1,3 +1,3 @@\n package pkg\n \n-func A() {}\n+func B() {}\n"
	if r.Change != wantDiff || text(r) != "Wrote pkg/new.go (3 lines; +1 -1)." {
		t.Fatalf("replace: %s\n%s", text(r), r.Change)
	}
	r = h.ok("file_write", M{"path": "pkg/new.go", "content": "package pkg\n\nfunc B() {}\n"})
	if r.Change != "" || !strings.Contains(text(r), "nothing was written") {
		t.Fatalf("same content: %s %q", text(r), r.Change)
	}
	if msg := h.refused("file_write", M{"path": "pkg", "content": "x"}); !strings.Contains(msg, "directory") {
		t.Fatalf("dir: %s", msg)
	}
	entries, _ := os.ReadDir(filepath.Join(cwd, "pkg"))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestWritesKeepMode(t *testing.T) {
	for _, lvl := range []string{"workspace", "unrestricted"} {
		t.Run(lvl, func(t *testing.T) {
			cwd := tempDir(t)
			p := filepath.Join(cwd, "run.sh")
			if err := os.WriteFile(p, []byte("#!/bin/sh\necho old\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o751); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, cwd, Options{})
			if lvl == "unrestricted" {
				h = h.at(3)
			}
			h.ok("file_edit", M{"path": "run.sh", "old": "old", "new": "new"})
			h.ok("file_write", M{"path": "run.sh", "content": "#!/bin/sh\necho newer\n"})
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o751 {
				t.Fatalf("mode = %v, want 0751", fi.Mode().Perm())
			}
			if got := readString(t, p); got != "#!/bin/sh\necho newer\n" {
				t.Fatalf("content %q", got)
			}
		})
	}
}

func TestWriteThroughSymlinkAtUnrestricted(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{"real.txt": "a\n"})
	if err := os.Symlink("real.txt", filepath.Join(cwd, "link.txt")); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{}).at(3)
	h.ok("file_edit", M{"path": "link.txt", "old": "a", "new": "b"})
	if fi, _ := os.Lstat(filepath.Join(cwd, "link.txt")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if got := readString(t, filepath.Join(cwd, "real.txt")); got != "b\n" {
		t.Fatalf("target: %q", got)
	}
}

func TestEditRefusesAmbiguousAndMissing(t *testing.T) {
	cwd := tempDir(t)
	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	writeFiles(t, cwd, map[string]string{"x.go": src})
	p := filepath.Join(cwd, "x.go")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, cwd, Options{})
	unchanged := func() {
		t.Helper()
		fi, _ := os.Stat(p)
		if got := readString(t, p); got != src || !fi.ModTime().Equal(old) {
			t.Fatalf("file changed after a refused edit: %q %v", got, fi.ModTime())
		}
	}

	msg := h.refused("file_edit", M{"path": "x.go", "old": "\treturn 1\n", "new": "\treturn 2\n"})
	for _, want := range []string{"occurs 2 times", "lines 2, 6", "Add surrounding lines", "replace_all"} {
		if !strings.Contains(msg, want) {
			t.Errorf("two matches: message lacks %q: %s", want, msg)
		}
	}
	unchanged()

	msg = h.refused("file_edit", M{"path": "x.go", "old": "func a() {\n    return 1\n}", "new": "x"})
	for _, want := range []string{"not found", "exactly", "whitespace", "starts at line 1", "file_read"} {
		if !strings.Contains(msg, want) {
			t.Errorf("whitespace mismatch: message lacks %q: %s", want, msg)
		}
	}
	unchanged()

	msg = h.refused("file_edit", M{"path": "x.go", "old": "func b() {\n\treturn 2\n}", "new": "x"})
	if !strings.Contains(msg, `"func b() {" appears at line 5`) {
		t.Errorf("first line hint: %s", msg)
	}
	msg = h.refused("file_edit", M{"path": "x.go", "old": "     5\tfunc b() {\n     6\t\treturn 1", "new": "x"})
	if !strings.Contains(msg, "line numbers") {
		t.Errorf("numbered old: %s", msg)
	}
	if msg := h.refused("file_edit", M{"path": "x.go", "old": "", "new": "x"}); !strings.Contains(msg, "old is empty") {
		t.Errorf("empty old: %s", msg)
	}
	if msg := h.refused("file_edit", M{"path": "nope.go", "old": "a", "new": "b"}); !strings.Contains(msg, "file_write") {
		t.Errorf("missing file: %s", msg)
	}
	unchanged()

	r := h.ok("file_edit", M{"path": "x.go", "old": "\treturn 1\n", "new": "\treturn 2\n", "replace_all": true})
	if got := readString(t, p); got != strings.ReplaceAll(src, "return 1", "return 2") {
		t.Fatalf("replace_all: %q", got)
	}
	if text(r) != "Edited x.go: replaced 2 occurrences (+2 -2 lines)." {
		t.Fatalf("result: %s", text(r))
	}
	want := "--- a/x.go\n+++ b/x.go\n@@ -1,7 +1,7 @@\n func a() {\n-\treturn 1\n+\treturn 2\n }\n \n func b() {\n-\treturn 1\n+\treturn 2\n }\n"
	if r.Change != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", r.Change, want)
	}
}

func TestEditOnce(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{"a.txt": numbered(1, 20), "crlf.txt": "one\r\ntwo\r\nthree\r\n"})
	h := newHarness(t, cwd, Options{})
	r := h.ok("file_edit", M{"path": "a.txt", "old": "line 10\n", "new": "line ten\nline ten and a half\n"})
	want := "--- a/a.txt\n+++ b/a.txt\n@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n+line ten and a half\n line 11\n line 12\n line 13\n"
	if r.Change != want {
		t.Fatalf("diff:\n%s", r.Change)
	}
	// file_read hides \r; an edit quoting LF lines still lands, CRLF kept.
	h.ok("file_edit", M{"path": "crlf.txt", "old": "one\ntwo\n", "new": "1\n2\n"})
	if got := readString(t, filepath.Join(cwd, "crlf.txt")); got != "1\r\n2\r\nthree\r\n" {
		t.Fatalf("crlf: %q", got)
	}
}

// editorFS stands in for an editor's buffers: it serves paths under dir
// from memory and routes the rest to the disk, with a note.
type editorFS struct {
	dir string
	mu  sync.Mutex
	buf map[string]string
}

func (e *editorFS) ReadFile(ctx context.Context, p string) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.buf[p]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func (e *editorFS) WriteFile(ctx context.Context, p string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.buf[p] = string(data)
	return nil
}

func (e *editorFS) Route(ctx context.Context, p string) ([]byte, Route, error) {
	if strings.HasPrefix(p, e.dir) {
		b, err := e.ReadFile(ctx, p)
		return b, Route{FS: e}, err
	}
	b, err := os.ReadFile(p)
	return b, Route{FS: Disk{}, Note: "The editor does not serve this file: it was written on disk."}, err
}

func TestRoutedWrites(t *testing.T) {
	cwd := tempDir(t)
	writeFiles(t, cwd, map[string]string{"proj/a.txt": "disk\n", "other.txt": "disk\n"})
	ed := &editorFS{dir: filepath.Join(cwd, "proj"), buf: map[string]string{filepath.Join(cwd, "proj/a.txt"): "buffer\n"}}
	h := newHarness(t, cwd, Options{FS: ed})

	if got := text(h.ok("file_read", M{"path": "proj/a.txt"})); got != "     1\tbuffer\n" {
		t.Fatalf("read through the editor: %q", got)
	}
	r := h.ok("file_edit", M{"path": "proj/a.txt", "old": "buffer", "new": "edited"})
	if ed.buf[filepath.Join(cwd, "proj/a.txt")] != "edited\n" || readString(t, filepath.Join(cwd, "proj/a.txt")) != "disk\n" {
		t.Fatal("the edit did not land in the buffer it was read from")
	}
	if strings.Contains(text(r), "editor does not serve") {
		t.Fatalf("unexpected note: %s", text(r))
	}
	r = h.ok("file_edit", M{"path": "other.txt", "old": "disk", "new": "changed"})
	if readString(t, filepath.Join(cwd, "other.txt")) != "changed\n" || !strings.Contains(text(r), "written on disk") {
		t.Fatalf("fallback route: %s", text(r))
	}
	h.ok("file_write", M{"path": "proj/new.txt", "content": "fresh\n"})
	if ed.buf[filepath.Join(cwd, "proj/new.txt")] != "fresh\n" {
		t.Fatal("a new file under the editor's project was not written through it")
	}
	if _, err := os.Stat(filepath.Join(cwd, "proj/new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the new file was written to disk as well")
	}
}
