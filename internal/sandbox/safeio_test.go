//go:build linux

package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWriteFileAtomic(t *testing.T) {
	w := newWorkspace(t)

	if err := WriteFileAtomic("new/dir/file.txt", []byte("hello"), w.roots); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, w.ws+"/new/dir/file.txt"); got != "hello" {
		t.Errorf("content = %q", got)
	}

	exec := w.ws + "/run.sh"
	mustWrite(t, exec, "old")
	if err := os.Chmod(exec, 0o751); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(exec, []byte("new"), w.roots); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exec)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o751 || readString(t, exec) != "new" {
		t.Errorf("after rewrite: mode %v, content %q; want 0751, \"new\"", fi.Mode().Perm(), readString(t, exec))
	}
	entries, _ := os.ReadDir(w.ws)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}

	if err := WriteFileAtomic(w.ro+"/file.txt", []byte("x"), w.roots); !errors.Is(err, ErrEscape) {
		t.Errorf("write into read-only root: %v, want ErrEscape", err)
	}
	if err := WriteFileAtomic("out/secret.txt", []byte("x"), w.roots); !errors.Is(err, ErrEscape) {
		t.Errorf("write through symlink pointing out: %v, want ErrEscape", err)
	}
	if err := WriteFileAtomic("sub", []byte("x"), w.roots); !errors.Is(err, ErrNotRegular) {
		t.Errorf("write over a directory: %v, want ErrNotRegular", err)
	}
	if readString(t, w.outside+"/secret.txt") != "secret\n" {
		t.Error("outside file changed")
	}
}

func TestReadFile(t *testing.T) {
	w := newWorkspace(t)
	for _, p := range []string{"in.txt", w.ro + "/file.txt", "inner/../in.txt"} {
		if _, err := ReadFile(p, w.roots); err != nil {
			t.Errorf("ReadFile(%q): %v", p, err)
		}
	}
	for _, p := range []string{"out/secret.txt", "../outside/secret.txt", w.outside + "/secret.txt"} {
		if _, err := ReadFile(p, w.roots); !errors.Is(err, ErrEscape) {
			t.Errorf("ReadFile(%q) = %v, want ErrEscape", p, err)
		}
	}
	if _, err := ReadFile("sub", w.roots); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(dir) = %v, want ErrNotRegular", err)
	}
}

// Open refuses what a read could block on, inside the roots as well: a
// FIFO with a writer that never writes would hold the read for ever.
func TestOpenRefusesSpecialFiles(t *testing.T) {
	w := newWorkspace(t)
	fifo := w.ws + "/pipe"
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	// A writer that holds the FIFO open and writes nothing.
	wr, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()
	for _, p := range []string{"pipe", "sub"} {
		f, err := Open(p, w.roots)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("Open(%q) = %v, want ErrNotRegular naming it", p, err)
		}
	}
	if _, err := ReadFile("pipe", w.roots); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(fifo) = %v, want ErrNotRegular", err)
	}
	f, err := Open("in.txt", w.roots)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "inside\n" {
		t.Errorf("Open(in.txt) read %q, %v", b, err)
	}
}

func TestOpenForWrite(t *testing.T) {
	w := newWorkspace(t)
	f, err := OpenForWrite("in.txt", os.O_WRONLY|os.O_APPEND, 0, w.roots)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "more\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := readString(t, w.ws+"/in.txt"); got != "inside\nmore\n" {
		t.Errorf("content = %q", got)
	}
	if _, err := OpenForWrite(w.ro+"/file.txt", os.O_WRONLY, 0, w.roots); !errors.Is(err, ErrEscape) {
		t.Errorf("OpenForWrite(read-only) = %v, want ErrEscape", err)
	}
}

// TestSwapAfterCheck swaps a symlink pointing out into the path between
// the roots check and the open, the race an attacker in the workspace
// would run, with and without openat2.
func TestSwapAfterCheck(t *testing.T) {
	// The target is ws/sub/deep/file.txt; outside mirrors sub/deep so that a
	// swapped path leads to a file that exists.
	swapDir := func(dir, to string) func(t *testing.T, w workspace) {
		return func(t *testing.T, w workspace) {
			if err := os.Rename(w.ws+dir, w.ws+dir+"-moved"); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, w.outside+to, w.ws+dir)
		}
	}
	swaps := []struct {
		name string
		swap func(t *testing.T, w workspace)
	}{
		{"file", func(t *testing.T, w workspace) {
			if err := os.Remove(w.ws + "/sub/deep/file.txt"); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, w.outside+"/secret.txt", w.ws+"/sub/deep/file.txt")
		}},
		{"parent directory", swapDir("/sub/deep", "/deep")},
		{"ancestor directory", swapDir("/sub", "")},
	}
	ops := []struct {
		name string
		do   func(o opener, w workspace) error
	}{
		{"write atomic", func(o opener, w workspace) error {
			return o.writeFileAtomic("sub/deep/file.txt", []byte("pwned\n"), w.roots)
		}},
		{"open for write", func(o opener, w workspace) error {
			f, err := o.openForWrite("sub/deep/file.txt", os.O_WRONLY|os.O_TRUNC, 0, w.roots)
			if err == nil {
				io.WriteString(f, "pwned\n")
				f.Close()
			}
			return err
		}},
		{"read", func(o opener, w workspace) error {
			_, err := o.readFile("sub/deep/file.txt", w.roots)
			return err
		}},
	}
	for _, noOpenat2 := range []bool{false, true} {
		for _, sw := range swaps {
			for _, op := range ops {
				name := sw.name + "/" + op.name
				if noOpenat2 {
					name += "/without openat2"
				}
				t.Run(name, func(t *testing.T) {
					w := newWorkspace(t)
					mustMkdir(t, w.ws+"/sub/deep")
					mustWrite(t, w.ws+"/sub/deep/file.txt", "mine\n")
					mustMkdir(t, w.outside+"/deep")
					mustWrite(t, w.outside+"/deep/file.txt", "secret\n")
					o := opener{noOpenat2: noOpenat2, afterCheck: func() { sw.swap(t, w) }}
					err := op.do(o, w)
					var ee *EscapeError
					if !errors.As(err, &ee) || ee.Reason != ReasonChanged {
						t.Fatalf("error = %v, want an *EscapeError with reason %q", err, ReasonChanged)
					}
					for _, p := range []string{"secret.txt", "deep/file.txt"} {
						if b := readString(t, w.outside+"/"+p); b != "secret\n" {
							t.Errorf("outside %s changed to %q", p, b)
						}
					}
				})
			}
		}
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}
