//go:build unix

package fstool

import (
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"meka.dev/meka/permission"
)

// A FIFO, a device or a socket is refused before it is opened for its
// content: reading one would block the turn (and Ctrl+C) for ever.
func TestSpecialFilesRefused(t *testing.T) {
	dir := tempDir(t)
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, level := range []permission.Level{permission.Workspace, permission.Unrestricted} {
		h := newHarness(t, dir, Options{Roots: newRoots(t, dir, nil, nil)}).at(level)
		for _, p := range []string{fifo, sock, "/dev/zero"} {
			if level == permission.Workspace && p == "/dev/zero" {
				continue // outside the roots: refused for that reason
			}
			for name, args := range map[string]map[string]any{
				"file_read":  {"path": p},
				"file_edit":  {"path": p, "old": "a", "new": "b"},
				"file_write": {"path": p, "content": "x"},
			} {
				msg := h.refused(name, args)
				if !strings.Contains(msg, "not a regular file") {
					t.Errorf("%s %s at %s: %q", name, filepath.Base(p), level, msg)
				}
			}
		}
	}
}
