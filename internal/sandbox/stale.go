package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Journal returns roots whose atomic writes note each temporary file in
// dir while it exists, so that CleanStale can remove the ones a crash
// left behind. Empty dir journals nothing.
func (r *Roots) Journal(dir string) *Roots {
	c := *r
	c.journal = dir
	return &c
}

// noteTemp records that tmp exists until the returned function runs. A
// journal that cannot be written only loses the clean-up after a crash.
func (r *Roots) noteTemp(tmp string) (done func()) {
	if r.journal == "" {
		return func() {}
	}
	if err := os.MkdirAll(r.journal, 0o700); err != nil {
		return func() {}
	}
	f, err := os.CreateTemp(r.journal, strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return func() {}
	}
	_, werr := f.WriteString(tmp)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return func() {}
	}
	return func() { os.Remove(f.Name()) }
}

// ShellDirPrefix starts the name of the directory holding a process's
// shell calls' private temp dirs; the process's id follows, so
// CleanStale knows whose it is.
const ShellDirPrefix = "meka-shell-"

// shellRoot is this process's directory of shell temp dirs, made on first
// use.
var shellRoot struct {
	mu  sync.Mutex
	dir string // canonical
}

// MkShellTemp creates a shell call's private temp dir in this process's
// directory of them, which it makes in the system temp directory, named
// for this process, the first time (and again if something removed it).
// Commands confined the same way share a launcher (see Launch) only when
// their temp dirs are made here.
func MkShellTemp() (string, error) {
	shellRoot.mu.Lock()
	defer shellRoot.mu.Unlock()
	for range 2 {
		if shellRoot.dir == "" {
			d, err := os.MkdirTemp("", ShellDirPrefix+strconv.Itoa(os.Getpid())+"-")
			if err != nil {
				return "", err
			}
			if c, err := Canonical(d); err == nil {
				d = c
			}
			shellRoot.dir = d
		}
		d, err := os.MkdirTemp(shellRoot.dir, "call-")
		if errors.Is(err, fs.ErrNotExist) && shellRoot.dir != "" {
			shellRoot.dir = "" // removed under us: make another
			continue
		}
		return d, err
	}
	return "", fmt.Errorf("make a shell temp dir: %w", fs.ErrNotExist)
}

// shellTempRoot returns the directory MkShellTemp makes temp dirs in, ""
// before it has made one.
func shellTempRoot() string {
	shellRoot.mu.Lock()
	defer shellRoot.mu.Unlock()
	return shellRoot.dir
}

// legacyAge is how old a temp dir without a process id in its name must be
// before CleanStale takes it for a crash's leftover.
const legacyAge = 24 * time.Hour

// CleanStale removes what processes that died left behind: the temporary
// files of atomic writes the journal dir lists, and the shell temp dirs
// in tmpDir (os.TempDir() when empty) of processes no longer running. It
// returns how many it removed; entries of live processes are kept.
func CleanStale(journal, tmpDir string, now time.Time) (int, error) {
	if tmpDir == "" {
		tmpDir = os.TempDir()
	}
	removed := 0
	var errs []error
	entries, err := os.ReadDir(journal)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, e := range entries {
		pid, _, _ := strings.Cut(e.Name(), "-")
		if alive(pid) {
			continue
		}
		note := filepath.Join(journal, e.Name())
		b, err := os.ReadFile(note)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		tmp := string(b)
		// Only what WriteFileAtomic names: a journal cannot be made to
		// delete anything else.
		if base := filepath.Base(tmp); filepath.IsAbs(tmp) && strings.HasPrefix(base, ".") && strings.Contains(base, ".meka-") && strings.HasSuffix(base, ".tmp") {
			if fi, err := os.Lstat(tmp); err == nil && fi.Mode().IsRegular() {
				if err := os.Remove(tmp); err == nil {
					removed++
				} else {
					errs = append(errs, err)
				}
			}
		}
		os.Remove(note)
	}
	dirs, err := os.ReadDir(tmpDir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, d := range dirs {
		rest, ok := strings.CutPrefix(d.Name(), ShellDirPrefix)
		if !ok || !d.IsDir() {
			continue
		}
		pid, _, named := strings.Cut(rest, "-")
		if _, err := strconv.Atoi(pid); err != nil {
			named = false
		}
		if named && alive(pid) {
			continue
		}
		if !named {
			fi, err := d.Info()
			if err != nil || now.Sub(fi.ModTime()) < legacyAge {
				continue
			}
		}
		if err := os.RemoveAll(filepath.Join(tmpDir, d.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("clean stale files: %w", err)
	}
	return removed, nil
}

// alive reports whether the process pid names runs (or cannot be told).
func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	return processAlive(n)
}
