package checkpoint

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
)

// A root the store snapshots is watched (inotify on Linux): every
// directory the snapshot walks gets a watch before it is read, so any
// change after the read raises an event naming the entry. The next
// snapshot reads the events queued so far, which for a write that has
// returned are all there (the kernel queues them in the write itself),
// stats only the names they report, and reuses the recorded trees of the
// directories with none. What the events cannot vouch for is looked at
// every time: files with other hard links (a write through a link
// elsewhere raises no event here) and nested repositories (not watched).
// An overflowed queue, a watch refused (the per-user limit), an error, a
// sweep of the store or a platform without the watcher means a full scan,
// which also starts the watcher again. Writes through a shared memory
// mapping raise their event only when the file is closed.

var (
	errUnsupported = errors.New("checkpoint: no file watcher on this platform")
	errWatchLimit  = errors.New("checkpoint: watch limit reached")
	errRemoteFS    = errors.New("checkpoint: a filesystem that can change without events")
)

// change is what events said of a name in a directory.
type change uint8

const (
	// changeAttr: written, or its metadata changed; a directory there is
	// the same directory.
	changeAttr change = 1 << iota
	// changeEntry: created, deleted or moved; a directory there is to be
	// listed again.
	changeEntry
)

// tracked is what the store keeps of one root between snapshots.
type tracked struct {
	w *watcher // nil: not watching
	// off: the watcher cannot work here (platform, watch limit); every
	// snapshot is a full scan.
	off  bool
	root *dirNode // nil: the next snapshot is a full scan
	// volatile are the nodes with linked files or nested repositories.
	volatile map[*dirNode]bool
	// swept is the store's sweep stamp when root was recorded: pruning
	// may have removed the objects of the trees reused.
	swept []byte
	// overflow makes the next drain lose its events as a full queue does
	// (a test hook).
	overflow bool
	// lastFull says whether the last snapshot was a full scan.
	lastFull bool
}

func newTracked() *tracked { return &tracked{volatile: map[*dirNode]bool{}} }

// close stops watching; the next snapshot is a full scan.
func (t *tracked) close() {
	if t == nil {
		return
	}
	if t.w != nil {
		t.w.close()
		t.w = nil
	}
	t.root = nil
	clear(t.volatile)
}

// watch adds a watch for the directory of n. A refusal leaves the root
// unwatched: the snapshot in progress is still a full one's equal, but
// the next cannot trust events.
func (t *tracked) watch(n *dirNode, abs string) {
	if t == nil || t.w == nil {
		return
	}
	err := t.w.add(n, abs)
	switch {
	case err == nil, errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		// Gone or unreadable: the listing that follows fails too, and
		// the parent's events say when that changes.
	case errors.Is(err, errWatchLimit), errors.Is(err, errRemoteFS):
		t.w.close()
		t.w, t.off = nil, true
	default:
		t.w.close()
		t.w = nil
	}
}

// noteVolatile keeps the set of nodes looked at on every snapshot.
func (t *tracked) noteVolatile(n *dirNode) {
	if t == nil || t.w == nil {
		return
	}
	v := len(n.nested) > 0
	for _, f := range n.files {
		v = v || f.linked
	}
	if v {
		t.volatile[n] = true
	} else {
		delete(t.volatile, n)
	}
}

// mark records an event about name in the directory of n.
func (t *tracked) mark(n *dirNode, name string, ch change) {
	switch name {
	case ".gitignore":
		// Every ignore decision below n may change: n is listed again.
		if n.parent == nil {
			t.root = nil
			return
		}
		n, name, ch = n.parent, n.name, changeEntry
	case ".git":
		// n may have become a repository of its own, or stopped being one.
		if n.parent == nil {
			return
		}
		n, name, ch = n.parent, n.name, changeAttr
	}
	if n.pending == nil {
		n.pending = map[string]change{}
	}
	n.pending[name] |= ch
	for p := n; p != nil && !p.stale; p = p.parent {
		p.stale = true
	}
}

// lost records that the directory of n itself went (deleted, moved,
// unmounted).
func (t *tracked) lost(n *dirNode) {
	if n.parent == nil {
		t.root = nil
		return
	}
	t.mark(n.parent, n.name, changeEntry)
}

const sweptFile = "meka-swept"

// stampSwept records that objects were removed from a store.
func stampSwept(dir string) error {
	b := make([]byte, 16)
	rand.Read(b)
	tmp := filepath.Join(dir, sweptFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, sweptFile))
}

// prepare brings the recorded tree up to the events queued, or drops it
// for a full scan; it says whether the snapshot can be incremental.
func (t *tracked) prepare(storeDir string) bool {
	if t == nil || t.off {
		return false
	}
	swept, _ := os.ReadFile(filepath.Join(storeDir, sweptFile))
	if t.w != nil {
		lose := t.overflow
		t.overflow = false
		if err := t.w.drain(t, lose); err != nil {
			t.root = nil
		}
	}
	if t.root != nil && !bytes.Equal(swept, t.swept) {
		t.root = nil
	}
	t.swept = swept
	if t.root != nil && t.w != nil {
		for n := range t.volatile {
			for name, f := range n.files {
				if f.linked {
					t.mark(n, name, changeAttr)
				}
			}
			for name := range n.nested {
				t.mark(n, name, changeAttr)
			}
		}
		return true
	}
	// A full scan: with a new watcher, so no watch or event of the old
	// tree lingers.
	t.close()
	w, err := newWatcher()
	if errors.Is(err, errUnsupported) {
		t.off = true
	}
	t.w = w
	return false
}

// update brings n's tree up to its pending names and its stale
// subdirectories.
func (sc *scan) update(n *dirNode, ign ignoreStack) error {
	if !n.stale {
		return nil // nothing changed since its tree was written
	}
	ign = ign.push(n.ign)
	abs := sc.abs(n.rel)
	for name, ch := range n.pending {
		if err := sc.recheck(n, abs, name, ch, ign); err != nil {
			return err
		}
	}
	n.pending = nil
	for _, c := range n.dirs {
		if c.stale {
			if err := sc.update(c, ign); err != nil {
				return err
			}
		}
	}
	n.stale = false
	return sc.seal(n)
}

// recheck records name in n's directory as it is now.
func (sc *scan) recheck(n *dirNode, abs, name string, ch change, ign ignoreStack) error {
	if name == ".git" {
		return nil
	}
	d, err := statEntry(abs, name)
	exists := err == nil
	old := n.dirs[name]
	if old != nil && exists && d.typ.IsDir() && ch == changeAttr && !nestedRepo(filepath.Join(abs, name)) && readable(filepath.Join(abs, name)) {
		return nil // the same directory: its own events say what changed in it
	}
	crel := childRel(n.rel, name)
	if _, ok := n.files[name]; ok {
		delete(n.files, name)
		sc.cacheDel(crel)
	}
	for i, l := range n.large {
		if l == name {
			n.large = append(n.large[:i:i], n.large[i+1:]...)
			break
		}
	}
	delete(n.nested, name)
	if old != nil {
		delete(n.dirs, name)
		sc.forget(old)
		sc.replaced = append(sc.replaced, old)
	}
	if !exists {
		return nil
	}
	return sc.entry(n, abs, d, ign)
}

// readable says a directory can still be listed (a chmod may have taken
// that away; a full scan leaves it out then).
func readable(abs string) bool {
	f, err := os.Open(abs)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// forget drops the stat cache entries of a subtree no longer recorded.
func (sc *scan) forget(n *dirNode) {
	for name := range n.files {
		sc.cacheDel(childRel(n.rel, name))
	}
	for _, c := range n.dirs {
		sc.forget(c)
	}
}

// unwatch removes the watches of the nodes replaced, except those a new
// node took over (the same directory listed again, or moved).
func (sc *scan) unwatch() {
	var drop func(n *dirNode)
	drop = func(n *dirNode) {
		if sc.track.w != nil {
			sc.track.w.remove(n)
		}
		delete(sc.track.volatile, n)
		for _, c := range n.dirs {
			drop(c)
		}
	}
	if sc.track != nil {
		for _, n := range sc.replaced {
			drop(n)
		}
	}
	sc.replaced = nil
}
