package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"meka.dev/meka/internal/sandbox"
)

// followingEditor writes as an editor does: through whatever the path
// leads to when it writes, symlinks followed. before runs first.
type followingEditor struct{ before func() }

func (e followingEditor) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return os.ReadFile(path)
}

func (e followingEditor) WriteFile(ctx context.Context, path string, data []byte) error {
	if e.before != nil {
		e.before()
	}
	return os.WriteFile(path, data, 0o644)
}

// raceDirs is a workspace with a directory d the attack swaps for a
// symlink to outside, which holds a file of the same name.
func raceDirs(t *testing.T) (ws, outside string, roots *sandbox.Roots) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ws + "/d/f.txt", outside + "/f.txt"} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("orig"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots, err = sandbox.NewRoots(ws, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ws, outside, roots
}

func swapOut(ws, outside string) {
	os.Rename(ws+"/d", ws+"/d.real")
	os.Symlink(outside, ws+"/d")
}

func swapBack(ws string) {
	os.Remove(ws + "/d")
	os.Rename(ws+"/d.real", ws+"/d")
}

func TestEditorWriteLandedOutside(t *testing.T) {
	for _, back := range []bool{false, true} {
		t.Run(fmt.Sprintf("swapped back %v", back), func(t *testing.T) {
			ws, outside, roots := raceDirs(t)
			ed := followingEditor{before: func() { swapOut(ws, outside) }}
			if back {
				ed = followingEditor{before: func() {
					swapOut(ws, outside)
					// The write lands outside, then the directory is put back.
					os.WriteFile(ws+"/d/f.txt", []byte("new"), 0o644)
					swapBack(ws)
				}}
			}
			err := frontDoorFS{ed}.WriteFileIn(t.Context(), ws+"/d/f.txt", []byte("new"), roots)
			if b, _ := os.ReadFile(outside + "/f.txt"); string(b) != "new" {
				t.Fatalf("the attack did not send the write outside (outside holds %q)", b)
			}
			if !errors.Is(err, ErrLandedOutside) {
				t.Errorf("a write that landed outside = %v, want ErrLandedOutside", err)
			}
		})
	}
	ws, _, roots := raceDirs(t)
	if err := (frontDoorFS{followingEditor{}}).WriteFileIn(t.Context(), ws+"/d/f.txt", []byte("fine"), roots); err != nil {
		t.Errorf("an undisturbed write = %v", err)
	}
}

// TestEditorWriteRace writes through the editor while another goroutine
// keeps swapping the directory for a symlink out and back: no write that
// landed outside is ever reported as a success.
func TestEditorWriteRace(t *testing.T) {
	ws, outside, roots := raceDirs(t)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			swapOut(ws, outside)
			swapBack(ws)
		}
	}()
	const writes = 800
	var ok, refused, outsideSeen int
	for i := range writes {
		data := fmt.Appendf(nil, "write %d", i)
		err := frontDoorFS{followingEditor{}}.WriteFileIn(context.Background(), ws+"/d/f.txt", data, roots)
		b, _ := os.ReadFile(outside + "/f.txt")
		landedOut := string(b) == string(data)
		if landedOut {
			outsideSeen++
		}
		switch {
		case err == nil && landedOut:
			t.Errorf("write %d landed outside but was reported as a success", i)
		case err == nil:
			ok++
		default:
			refused++
		}
	}
	stop.Store(true)
	<-done
	swapBack(ws)
	t.Logf("%d writes: %d succeeded inside, %d refused or reported (%d landed outside)", writes, ok, refused, outsideSeen)
}
