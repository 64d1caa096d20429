package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// workspace lays out a tree for the roots tests:
//
//	base/ws            cwd, writable
//	base/ws/sub
//	base/ws/in.txt
//	base/ws/out -> base/outside      (a symlink pointing out)
//	base/ws/dangle -> base/outside/new.txt
//	base/ws/inner -> base/ws/sub     (a symlink staying in)
//	base/extra         additional writable
//	base/ro            additional read-only, with ro/file.txt
//	base/ro/rw         additional writable inside the read-only root
//	base/outside/secret.txt
type workspace struct {
	base, ws, extra, ro, outside string
	roots                        *Roots
}

func newWorkspace(t *testing.T) workspace {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := workspace{
		base:    base,
		ws:      filepath.Join(base, "ws"),
		extra:   filepath.Join(base, "extra"),
		ro:      filepath.Join(base, "ro"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{w.ws + "/sub", w.extra, w.ro + "/rw", w.outside} {
		mustMkdir(t, d)
	}
	mustWrite(t, w.ws+"/in.txt", "inside\n")
	mustWrite(t, w.ro+"/file.txt", "read only\n")
	mustWrite(t, w.outside+"/secret.txt", "secret\n")
	mustSymlink(t, w.outside, w.ws+"/out")
	mustSymlink(t, w.outside+"/new.txt", w.ws+"/dangle")
	mustSymlink(t, w.ws+"/sub", w.ws+"/inner")
	w.roots, err = NewRoots(w.ws, []string{w.extra, w.ro + "/rw"}, []string{w.ro})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestNewRootsCollapses(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, w.extra, w.base+"/extra-link")
	r, err := NewRoots(w.ws,
		[]string{w.ws + "/sub", w.base + "/extra-link", w.extra, w.ro + "/rw"},
		[]string{w.ws + "/sub", w.ro, w.ro + "/rw", w.ro})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Writable(), []string{w.ws, w.extra, w.ro + "/rw"}; !slices.Equal(got, want) {
		t.Errorf("Writable() = %q, want %q", got, want)
	}
	if got, want := r.ReadOnly(), []string{w.ro}; !slices.Equal(got, want) {
		t.Errorf("ReadOnly() = %q, want %q", got, want)
	}
	if got, want := r.All(), []string{w.ws, w.extra, w.ro + "/rw", w.ro}; !slices.Equal(got, want) {
		t.Errorf("All() = %q, want %q", got, want)
	}
	if r.Cwd() != w.ws {
		t.Errorf("Cwd() = %q, want %q", r.Cwd(), w.ws)
	}
}

func TestResolve(t *testing.T) {
	w := newWorkspace(t)
	tests := []struct {
		name   string
		path   string
		cwd    string
		write  bool
		want   string // canonical result; empty when refused
		reason string
	}{
		{name: "relative", path: "in.txt", want: w.ws + "/in.txt"},
		{name: "relative write", path: "in.txt", write: true, want: w.ws + "/in.txt"},
		{name: "not yet existing", path: "a/b/c.txt", write: true, want: w.ws + "/a/b/c.txt"},
		{name: "dot-dot staying inside", path: "sub/../in.txt", want: w.ws + "/in.txt"},
		{name: "dot-dot from a sub cwd", path: "../in.txt", cwd: w.ws + "/sub", want: w.ws + "/in.txt"},
		{name: "symlink staying inside", path: "inner/x.txt", write: true, want: w.ws + "/sub/x.txt"},
		{name: "absolute in another root", path: w.extra + "/x", write: true, want: w.extra + "/x"},
		{name: "dot-dot escape", path: "../outside/secret.txt", reason: ReasonDotDot},
		{name: "deep dot-dot escape", path: "sub/../../../../etc/passwd", reason: ReasonDotDot},
		{name: "absolute outside", path: w.outside + "/secret.txt", reason: ReasonOutside},
		{name: "absolute system file", path: "/etc/passwd", reason: ReasonOutside},
		{name: "symlink pointing out", path: "out/secret.txt", reason: ReasonSymlink},
		{name: "symlink pointing out, write", path: "out/new.txt", write: true, reason: ReasonSymlink},
		{name: "dangling symlink pointing out", path: "dangle", write: true, reason: ReasonSymlink},
		{name: "read-only root read", path: w.ro + "/file.txt", want: w.ro + "/file.txt"},
		{name: "read-only root write", path: w.ro + "/file.txt", write: true, reason: ReasonReadOnly},
		{name: "read-only root new file", path: w.ro + "/new.txt", write: true, reason: ReasonReadOnly},
		{name: "writable inside read-only", path: w.ro + "/rw/x", write: true, want: w.ro + "/rw/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := w.roots.Resolve(tt.path, tt.cwd, tt.write)
			if tt.reason == "" {
				if err != nil || got != tt.want {
					t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
				}
				return
			}
			var ee *EscapeError
			if !errors.As(err, &ee) || !errors.Is(err, ErrEscape) {
				t.Fatalf("Resolve(%q) = %q, %v; want an *EscapeError", tt.path, got, err)
			}
			if ee.Reason != tt.reason || ee.Path != tt.path {
				t.Errorf("EscapeError = %+v, want reason %q", ee, tt.reason)
			}
			msg := err.Error()
			for _, root := range []string{w.ws, w.extra, w.ro} {
				if !strings.Contains(msg, root) {
					t.Errorf("message %q does not name root %s", msg, root)
				}
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, "loop-b", w.ws+"/loop-a")
	mustSymlink(t, "loop-a", w.ws+"/loop-b")
	if _, err := Canonical(w.ws + "/loop-a/x"); !errors.Is(err, errLoop) {
		t.Errorf("Canonical(loop) error = %v, want %v", err, errLoop)
	}
	mustSymlink(t, "../outside", w.ws+"/rel-out")
	if got, err := Canonical(w.ws + "/rel-out/a/../secret.txt"); err != nil || got != w.outside+"/secret.txt" {
		t.Errorf("Canonical(relative link) = %q, %v", got, err)
	}
	if got, err := Canonical(w.ws + "/dangle"); err != nil || got != w.outside+"/new.txt" {
		t.Errorf("Canonical(dangling link) = %q, %v", got, err)
	}
	// A link through a missing directory and back out again does not
	// resolve, in the kernel or here: it must not come out lexically as a
	// path beside the link.
	mustSymlink(t, "ghost/../in.txt", w.ws+"/through-ghost")
	if got, err := Canonical(w.ws + "/through-ghost"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Canonical(link through a missing directory) = %q, %v; want not-exist", got, err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"in.txt", "../x", "out/secret.txt", "inner/../../outside", "/etc/passwd", "dangle", "a//b/./c"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	ws, outside := base+"/ws", base+"/outside"
	if err := os.MkdirAll(ws+"/sub", 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(outside, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(outside, ws+"/out"); err != nil {
		f.Fatal(err)
	}
	roots, err := NewRoots(ws, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string, write bool) {
		if strings.ContainsRune(p, 0) {
			return
		}
		got, err := roots.Resolve(p, "", write)
		if err != nil {
			return
		}
		if !Within(got, ws) {
			t.Fatalf("Resolve(%q) = %q, outside %s", p, got, ws)
		}
		if c, err := Canonical(got); err != nil || c != got {
			t.Fatalf("Resolve(%q) = %q, not canonical (%q, %v)", p, got, c, err)
		}
	})
}

func TestProtected(t *testing.T) {
	ws := canonTemp(t)
	mustMkdir(t, ws+"/.git/hooks")
	mustWrite(t, ws+"/.git/config", "[core]\n")
	roots, err := NewRoots(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots = roots.Protect(ws + "/.meka")
	for _, p := range []string{".git/config", ".git/hooks/pre-commit", ".meka/config.toml"} {
		_, err := roots.Resolve(p, "", true)
		var esc *EscapeError
		if !errors.As(err, &esc) || esc.Reason != ReasonProtect {
			t.Errorf("Resolve(%s, write) = %v, want refused as protected", p, err)
		}
		if _, err := roots.Resolve(p, "", false); err != nil {
			t.Errorf("Resolve(%s, read) = %v, want allowed", p, err)
		}
	}
	if err := WriteFileAtomic(ws+"/.git/config", []byte("[core]\nfsmonitor = evil\n"), roots); !errors.Is(err, ErrEscape) {
		t.Errorf("WriteFileAtomic(.git/config) = %v, want refused", err)
	}
	if _, err := roots.Resolve(".gitignore", "", true); err != nil {
		t.Errorf("Resolve(.gitignore) = %v", err)
	}
}

// A directory whose name only begins with a root's is not inside it: a
// prefix test without the separator would let <base>/ws-evil pass for
// <base>/ws.
func TestWithinNeedsASeparator(t *testing.T) {
	tests := []struct {
		p, dir string
		want   bool
	}{
		{"/a/ws", "/a/ws", true},
		{"/a/ws/x", "/a/ws", true},
		{"/a/ws-evil", "/a/ws", false},
		{"/a/ws-evil/x", "/a/ws", false},
		{"/a/wsx", "/a/ws", false},
		{"/a", "/a/ws", false},
		{"/a/ws", "/", true},
		{"/", "/", true},
	}
	for _, tt := range tests {
		if got := Within(tt.p, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.dir, got, tt.want)
		}
	}

	w := newWorkspace(t)
	evil := w.ws + "-evil"
	mustMkdir(t, evil)
	mustWrite(t, evil+"/secret.txt", "secret\n")
	for _, write := range []bool{false, true} {
		got, err := w.roots.Resolve(evil+"/secret.txt", "", write)
		var ee *EscapeError
		if !errors.As(err, &ee) || ee.Reason != ReasonOutside {
			t.Errorf("Resolve(sibling %s, write=%v) = %q, %v; want refused as outside", evil, write, got, err)
		}
	}
	if w.roots.Contains(evil, false) {
		t.Errorf("Contains(%s) = true: a sibling with the root's name as prefix counts as inside", evil)
	}
	// NewRoots keeps a sibling root that shares the prefix: it is not
	// under the cwd.
	r, err := NewRoots(w.ws, []string{evil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Writable(), []string{w.ws, evil}; !slices.Equal(got, want) {
		t.Errorf("Writable() = %q, want %q", got, want)
	}
}

// The refusal tells the model where it may work: both kinds of root, or
// only the read-only ones when there is no writable root.
func TestEscapeErrorNamesTheRoots(t *testing.T) {
	for _, tc := range []struct {
		err  EscapeError
		want string
	}{
		{EscapeError{Path: "x", Reason: ReasonOutside, Writable: []string{"/w", "/v"}, ReadOnly: []string{"/r"}},
			"path x is refused: " + ReasonOutside + ". You may read and write under /w, /v; read only under /r."},
		{EscapeError{Path: "x", Reason: ReasonOutside, ReadOnly: []string{"/r"}},
			"path x is refused: " + ReasonOutside + ". You may read only under /r."},
		{EscapeError{Path: "x", Reason: ReasonOutside, Writable: []string{"/w"}},
			"path x is refused: " + ReasonOutside + ". You may read and write under /w."},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q\nwant      %q", got, tc.want)
		}
	}
}

// Protect adds each path once, canonical, and leaves the roots it was
// called on as they were.
func TestProtectAddsOnce(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, w.ws+"/sub", w.ws+"/sub-link")
	before := w.roots.Protected()
	r := w.roots.Protect(w.ws+"/sub", w.ws+"/sub-link", w.ws+"/sub")
	got := r.Protected()
	if n := len(got) - len(before); n != 1 || got[len(got)-1] != w.ws+"/sub" {
		t.Errorf("Protected() after Protect = %q (before %q), want %s added once", got, before, w.ws+"/sub")
	}
	if !slices.Equal(w.roots.Protected(), before) {
		t.Errorf("Protect changed the roots it was called on: %q", w.roots.Protected())
	}
	if r.Contains(w.ws+"/sub/f", true) || !r.Contains(w.ws+"/sub/f", false) || !r.Contains(w.ws+"/in.txt", true) {
		t.Error("a protected directory is not read-only, or the rest not writable")
	}
}

// A protected directory holding the workspace (meka's data directory,
// under which it makes worktrees) leaves the workspace writable, and the
// rest of it out of reach.
func TestProtectHoldingWorkspace(t *testing.T) {
	data := canonTemp(t)
	ws := data + "/worktrees/repo/feat"
	mustMkdir(t, ws)
	mustWrite(t, data+"/meka.db", "")
	roots, err := NewRoots(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots = roots.Protect(data)
	if _, err := roots.Resolve("new.txt", "", true); err != nil {
		t.Errorf("Resolve(new.txt, write) in a workspace inside a protected directory = %v", err)
	}
	if roots.Contains(data+"/meka.db", true) {
		t.Error("the protected directory's own files became writable")
	}
}

// Symlink chains resolve up to the kernel's 40 links, and no further.
func TestCanonicalLinkLimit(t *testing.T) {
	dir := canonTemp(t)
	mustWrite(t, dir+"/target", "x")
	prev := "target"
	for i := range maxLinks + 1 {
		name := fmt.Sprintf("l%02d", i)
		mustSymlink(t, prev, dir+"/"+name)
		prev = name
	}
	if got, err := Canonical(dir + fmt.Sprintf("/l%02d", maxLinks-1)); err != nil || got != dir+"/target" {
		t.Errorf("a chain of %d links = %q, %v; want the target", maxLinks, got, err)
	}
	if _, err := Canonical(dir + fmt.Sprintf("/l%02d", maxLinks)); !errors.Is(err, errLoop) {
		t.Errorf("a chain of %d links = %v, want %v", maxLinks+1, err, errLoop)
	}
}

// A root given twice keeps the place of its first mention.
func TestNewRootsKeepsTheFirstMention(t *testing.T) {
	w := newWorkspace(t)
	r, err := NewRoots(w.ws, []string{w.extra, w.ro + "/rw", w.extra}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Writable(), []string{w.ws, w.extra, w.ro + "/rw"}; !slices.Equal(got, want) {
		t.Errorf("Writable() = %q, want %q", got, want)
	}
}

// getEnv reads a variable as exec would: the last entry for it wins.
func TestGetEnvLastWins(t *testing.T) {
	env := []string{"A=1", "B=2", "A=3", "C"}
	if got := getEnv(env, "A"); got != "3" {
		t.Errorf("getEnv(A) = %q, want 3", got)
	}
	if got := getEnv(env, "D"); got != "" {
		t.Errorf("getEnv(D) = %q, want empty", got)
	}
}

// canonTemp is a t.TempDir with its symlinks resolved.
func canonTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}
