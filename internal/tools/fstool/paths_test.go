package fstool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

func TestWorkspaceRefusesEscapes(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{
		"ws/in.txt":          "inside\n",
		"outside/secret.txt": "secret\n",
	})
	if err := os.Symlink(outside, filepath.Join(cwd, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(cwd, "secret-link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct {
		name  string
		roots Roots
	}{
		{"sandbox roots", newRoots(t, cwd, nil, nil)},
		{"default roots", nil},
	} {
		t.Run(o.name, func(t *testing.T) {
			h := newHarness(t, cwd, Options{Roots: o.roots})
			escapes := []string{
				"../outside/secret.txt",
				filepath.Join(outside, "secret.txt"),
				"link/secret.txt",
				"secret-link.txt",
				"sub/../../outside/secret.txt",
			}
			for _, p := range escapes {
				for _, lvl := range []permission.Level{permission.Read, permission.Workspace} {
					msg := h.at(lvl).refused("file_read", M{"path": p})
					if strings.Contains(msg, "secret\n") || !strings.Contains(msg, "refused") {
						t.Errorf("file_read %s at %s: %s", p, lvl, msg)
					}
				}
				h.refused("file_write", M{"path": p, "content": "pwned\n"})
				h.refused("file_edit", M{"path": p, "old": "secret", "new": "pwned"})
				h.refused("file_search", M{"pattern": "secret", "path": p})
			}
			h.refused("file_find", M{"pattern": "*", "path": "../outside"})
			h.refused("file_write", M{"path": "link/new.txt", "content": "x"})
			if got := readString(t, filepath.Join(outside, "secret.txt")); got != "secret\n" {
				t.Fatalf("outside file changed: %q", got)
			}
			if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
				t.Fatal("a file was created outside the roots")
			}
			// Inside is fine, including a symlink that stays inside.
			if err := os.Symlink("in.txt", filepath.Join(cwd, "in-link.txt")); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
			if got := text(h.ok("file_read", M{"path": "in-link.txt"})); !strings.Contains(got, "inside") {
				t.Fatalf("read through inner symlink: %s", got)
			}
		})
	}
}

func TestUnrestrictedReachesAnywhere(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "ws")
	writeFiles(t, base, map[string]string{"ws/a.txt": "a\n", "outside/b.txt": "b\n"})
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, nil, nil)}).at(permission.Unrestricted)
	if got := text(h.ok("file_read", M{"path": "../outside/b.txt"})); !strings.Contains(got, "b") {
		t.Fatalf("read: %s", got)
	}
	h.ok("file_edit", M{"path": "../outside/b.txt", "old": "b", "new": "c"})
	if got := readString(t, filepath.Join(base, "outside/b.txt")); got != "c\n" {
		t.Fatalf("edit outside at unrestricted: %q", got)
	}
}

func TestReadOnlyRoots(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "ws")
	lib := filepath.Join(base, "lib")
	writeFiles(t, base, map[string]string{"ws/a.txt": "a\n", "lib/doc.txt": "library docs\n"})
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, nil, []string{lib})})

	if got := text(h.ok("file_read", M{"path": filepath.Join(lib, "doc.txt")})); !strings.Contains(got, "library docs") {
		t.Fatalf("read of a read-only root: %s", got)
	}
	if got := text(h.ok("file_search", M{"pattern": "library"})); !strings.Contains(got, filepath.Join(lib, "doc.txt")+":1:library docs") {
		t.Fatalf("search sweeps the read-only root: %s", got)
	}
	msg := h.refused("file_write", M{"path": filepath.Join(lib, "doc.txt"), "content": "x"})
	if !strings.Contains(msg, "read-only") {
		t.Fatalf("write refusal does not say why: %s", msg)
	}
	h.refused("file_edit", M{"path": filepath.Join(lib, "doc.txt"), "old": "library", "new": "x"})
	h.refused("file_write", M{"path": filepath.Join(lib, "new.txt"), "content": "x"})
	if got := readString(t, filepath.Join(lib, "doc.txt")); got != "library docs\n" {
		t.Fatalf("read-only file changed: %q", got)
	}
}

// swapFS swaps a directory for a symlink leading out of the roots after
// the tool has checked the path and before the write opens it.
type swapFS struct {
	Disk
	dir, to string
}

func (s swapFS) WriteFileIn(ctx context.Context, path string, data []byte, roots *sandbox.Roots) error {
	if err := os.Rename(s.dir, s.dir+".moved"); err != nil {
		return err
	}
	if err := os.Symlink(s.to, s.dir); err != nil {
		return err
	}
	return s.Disk.WriteFileIn(ctx, path, data, roots)
}

func TestSymlinkSwappedAfterCheckIsRefused(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{"ws/sub/f.txt": "old\n", "outside/f.txt": "outside\n"})
	h := newHarness(t, cwd, Options{
		Roots: newRoots(t, cwd, nil, nil),
		FS:    swapFS{dir: filepath.Join(cwd, "sub"), to: outside},
	})
	msg := h.refused("file_edit", M{"path": "sub/f.txt", "old": "old", "new": "new"})
	if !strings.Contains(msg, "cannot write") {
		t.Fatalf("message: %s", msg)
	}
	if got := readString(t, filepath.Join(outside, "f.txt")); got != "outside\n" {
		t.Fatalf("the write followed the swapped symlink: %q", got)
	}
}

func TestScratchpadIsReadable(t *testing.T) {
	base := tempDir(t)
	cwd := filepath.Join(base, "ws")
	scratch := filepath.Join(base, "scratch")
	writeFiles(t, base, map[string]string{"ws/a.txt": "a\n", "scratch/out.txt": "found it\n"})
	h := newHarness(t, cwd, Options{Roots: newRoots(t, cwd, nil, nil), ScratchDir: scratch})
	if got := text(h.ok("file_read", M{"path": filepath.Join(scratch, "out.txt")})); !strings.Contains(got, "found it") {
		t.Fatalf("scratch read: %s", got)
	}
	h.refused("file_write", M{"path": filepath.Join(scratch, "out.txt"), "content": "x"})
}

func TestCollapseRoots(t *testing.T) {
	got := collapseRoots([]string{"/w/a/b", "/w/c", "/w/a", "/w/c", "/w/a/b/d", "/x"})
	want := []string{"/w/a", "/w/c", "/x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("collapseRoots = %v, want %v", got, want)
	}
}

// A path outside the roots makes a call need the unrestricted level, so
// that with approvals on the gate asks rather than the tool refusing; a
// read of a readable root does not.
func TestCallLevel(t *testing.T) {
	cwd, ro, out := tempDir(t), tempDir(t), tempDir(t)
	roots := newRoots(t, cwd, nil, []string{ro})
	tools := toolset(Options{Roots: roots})
	call := func(name, path string) permission.Level {
		args, _ := json.Marshal(map[string]string{"path": path})
		return tools[name].(tool.CallLeveler).CallLevel(tool.Call{Name: name, Arguments: args, Cwd: cwd, Level: permission.Workspace})
	}
	for _, tc := range []struct {
		name, path string
		want       permission.Level
	}{
		{"file_write", "new.txt", permission.Workspace},
		{"file_write", filepath.Join(out, "x.txt"), permission.Unrestricted},
		{"file_edit", "../" + filepath.Base(out) + "/x.txt", permission.Unrestricted},
		{"file_write", filepath.Join(ro, "x.txt"), permission.Unrestricted},
		{"file_read", filepath.Join(ro, "x.txt"), permission.Read},
		{"file_read", filepath.Join(out, "x.txt"), permission.Unrestricted},
		{"file_read", "", permission.Read},
	} {
		if got := call(tc.name, tc.path); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.name, tc.path, got, tc.want)
		}
	}
}
