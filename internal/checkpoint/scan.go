package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A full snapshot stats every file of the root (tens of milliseconds for
// ten thousand; an incremental one only the names events reported) and
// reads only those whose stat differs from the stat cache: path, size,
// mtime, ctime, inode and mode → blob, as git's index keeps them. Trees
// are built in-process; only new objects are written.

// statKey is what must not have moved for a file's recorded blob to be
// trusted.
type statKey struct {
	mode  uint32 // the tree mode: file, executable or link
	size  int64
	mtime int64
	ctime int64
	ino   uint64
}

type cached struct {
	statKey
	id oid
}

// racyWindow: a file whose mtime or ctime is this close to the scan's
// start is not cached, since a later write within the filesystem's
// timestamp granularity (2 s on FAT) could leave its stat as it was.
const racyWindow = 2 * time.Second

const statCacheMagic = "meka stat cache 1\n"

// statCache is the cache of one shadow, persisted in it so a new process
// (or another session on the root) starts warm.
type statCache struct {
	path    string
	entries map[string]cached
	// stamp is the file's size and mtime when last read or written: a
	// change means another process wrote it.
	stamp [2]int64
}

func fileStamp(fi fs.FileInfo) [2]int64 { return [2]int64{fi.Size(), fi.ModTime().UnixNano()} }

// load reads the cache file when it changed since this process last saw it.
func (c *statCache) load() {
	fi, err := os.Stat(c.path)
	if err != nil {
		c.entries, c.stamp = nil, [2]int64{}
		return
	}
	if c.entries != nil && fileStamp(fi) == c.stamp {
		return
	}
	c.entries, c.stamp = nil, fileStamp(fi)
	b, err := os.ReadFile(c.path)
	if err != nil || !bytes.HasPrefix(b, []byte(statCacheMagic)) {
		return
	}
	r := bytes.NewReader(b[len(statCacheMagic):])
	n, err := binary.ReadUvarint(r)
	if err != nil || n > uint64(len(b)) {
		return
	}
	m := make(map[string]cached, n)
	for range n {
		var e cached
		l, err := binary.ReadUvarint(r)
		if err != nil || l > uint64(r.Len()) {
			return
		}
		name := make([]byte, l)
		io.ReadFull(r, name)
		mode, err1 := binary.ReadUvarint(r)
		size, err2 := binary.ReadVarint(r)
		mt, err3 := binary.ReadVarint(r)
		ct, err4 := binary.ReadVarint(r)
		ino, err5 := binary.ReadUvarint(r)
		_, err6 := io.ReadFull(r, e.id[:])
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			return // a torn file is an empty cache
		}
		e.statKey = statKey{uint32(mode), size, mt, ct, ino}
		m[string(name)] = e
	}
	c.entries = m
}

func (c *statCache) save(entries map[string]cached) error {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	w.WriteString(statCacheMagic)
	var tmp [binary.MaxVarintLen64]byte
	uv := func(v uint64) { w.Write(tmp[:binary.PutUvarint(tmp[:], v)]) }
	sv := func(v int64) { w.Write(tmp[:binary.PutVarint(tmp[:], v)]) }
	uv(uint64(len(entries)))
	for name, e := range entries {
		uv(uint64(len(name)))
		w.WriteString(name)
		uv(uint64(e.mode))
		sv(e.size)
		sv(e.mtime)
		sv(e.ctime)
		uv(e.ino)
		w.Write(e.id[:])
	}
	w.Flush()
	f, err := os.CreateTemp(filepath.Dir(c.path), "stat-*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("checkpoint: save stat cache: %w", err)
	}
	c.entries = entries
	if fi, err := os.Stat(c.path); err == nil {
		c.stamp = fileStamp(fi)
	}
	return nil
}

// scan is one snapshot's walk of a root: a full one lists every
// directory; an incremental one (see track.go) revisits only the names
// the watcher reported and reuses the trees of the rest.
type scan struct {
	root    string
	objs    objects
	maxFile int64
	trusted int64 // unix ns: stat times before this are cached
	written int64 // bytes of new objects
	track   *tracked
	// old is the stat cache as loaded. A full scan builds next, the cache
	// of what it saw; an incremental one collects edits to old.
	old   map[string]cached
	next  map[string]cached
	edits map[string]cacheEdit
	// replaced are the nodes a name no longer leads to: their watches are
	// removed after the walk, unless a new node took them over.
	replaced []*dirNode
}

type cacheEdit struct {
	c   cached
	del bool
}

func (sc *scan) incremental() bool { return sc.edits != nil }

func (sc *scan) cacheSet(rel string, c cached) {
	if sc.incremental() {
		sc.edits[rel] = cacheEdit{c: c}
		return
	}
	sc.next[rel] = c
}

func (sc *scan) cacheDel(rel string) {
	if sc.incremental() {
		sc.edits[rel] = cacheEdit{del: true}
	}
}

// cacheChanged says whether the stat cache must be written again, and
// applies an incremental scan's edits to it.
func (sc *scan) cacheChanged() bool {
	if !sc.incremental() {
		if len(sc.next) != len(sc.old) {
			return true
		}
		for rel, c := range sc.next {
			if o, ok := sc.old[rel]; !ok || o != c {
				return true
			}
		}
		return false
	}
	changed := false
	for rel, e := range sc.edits {
		o, ok := sc.old[rel]
		switch {
		case e.del && ok:
			delete(sc.old, rel)
			changed = true
		case !e.del && (!ok || o != e.c):
			sc.old[rel] = e.c
			changed = true
		}
	}
	sc.next = sc.old
	return changed
}

// worktreesDir holds meka's own worktrees inside a root: other sessions'
// files, never snapshotted.
const worktreesDir = ".meka/worktrees"

// dirNode is one directory as the last snapshot recorded it: what its
// tree is made of, so that a snapshot can rebuild the tree from the names
// that changed.
type dirNode struct {
	parent *dirNode
	name   string // in parent
	rel    string // slash-separated, relative to the root; "" for the root
	ign    *ignoreFile
	files  map[string]fileEntry // the files and symlinks recorded
	dirs   map[string]*dirNode  // the subdirectories walked
	nested map[string]bool      // subdirectories that are repositories of their own
	large  []string             // names of files over the size limit
	tree   oid
	ok     bool     // tree records something (git keeps no empty directories)
	skip   []string // the files over the limit in the subtree, relative to the root
	// wd is the directory's watch, -1 for none; pending are the names
	// the watcher reported since, and stale says that pending is not
	// empty here or below.
	wd      int
	pending map[string]change
	stale   bool
}

// fileEntry is a file or symlink recorded.
type fileEntry struct {
	mode uint32
	id   oid
	// linked says the file has other hard links, through which a write
	// raises no event here: it is looked at on every snapshot.
	linked bool
}

func newNode(parent *dirNode, name string) *dirNode {
	n := &dirNode{parent: parent, name: name, wd: -1}
	if parent != nil {
		n.rel = childRel(parent.rel, name)
	}
	return n
}

func childRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func (sc *scan) abs(rel string) string {
	if rel == "" {
		return sc.root
	}
	return filepath.Join(sc.root, filepath.FromSlash(rel))
}

// nestedRepo says a directory is a repository of its own: git records
// only its commit, and meka leaves it alone.
func nestedRepo(abs string) bool {
	_, err := os.Lstat(filepath.Join(abs, ".git"))
	return err == nil
}

// errGone says a directory went, or cannot be read, mid-walk: it is not
// recorded.
var errGone = errors.New("checkpoint: directory gone")

// list records the directory of n afresh. It is watched before it is
// read: a change after the read raises an event for the next snapshot.
func (sc *scan) list(n *dirNode, ign ignoreStack) error {
	abs := sc.abs(n.rel)
	sc.track.watch(n, abs)
	des, err := readDir(abs)
	if err != nil {
		if n.parent != nil && (errors.Is(err, os.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return errGone
		}
		return fmt.Errorf("checkpoint: %w", err)
	}
	for _, d := range des {
		if d.name == ".gitignore" && d.typ.IsRegular() {
			if b, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
				n.ign = parseIgnore(n.rel, b)
			}
			break
		}
	}
	ign = ign.push(n.ign)
	n.files = make(map[string]fileEntry, len(des))
	for _, d := range des {
		if err := sc.entry(n, abs, d, ign); err != nil {
			return err
		}
	}
	return sc.seal(n)
}

// entry records one name of n's directory (at abs) as listed or stat'd.
func (sc *scan) entry(n *dirNode, abs string, d dirent, ign ignoreStack) error {
	name := d.name
	if name == ".git" {
		return nil
	}
	crel := childRel(n.rel, name)
	switch {
	case d.typ.IsDir():
		if crel == worktreesDir || ign.ignored(crel, name, true) {
			return nil
		}
		if nestedRepo(filepath.Join(abs, name)) {
			if n.nested == nil {
				n.nested = map[string]bool{}
			}
			n.nested[name] = true
			return nil
		}
		c := newNode(n, name)
		if err := sc.list(c, ign); err != nil {
			sc.replaced = append(sc.replaced, c)
			if err == errGone {
				return nil
			}
			return err
		}
		if n.dirs == nil {
			n.dirs = map[string]*dirNode{}
		}
		n.dirs[name] = c
	case d.typ.IsRegular() || d.typ&fs.ModeSymlink != 0:
		if ign.ignored(crel, name, false) {
			return nil
		}
		return sc.file(n, name, crel, filepath.Join(abs, name), d)
	}
	return nil
}

// seal writes n's tree from what it records.
func (sc *scan) seal(n *dirNode) error {
	es := make([]entry, 0, len(n.files)+len(n.dirs))
	for name, f := range n.files {
		es = append(es, entry{name: name, mode: f.mode, id: f.id})
	}
	n.skip = n.skip[:0]
	for _, name := range n.large {
		n.skip = append(n.skip, childRel(n.rel, name))
	}
	for name, c := range n.dirs {
		n.skip = append(n.skip, c.skip...)
		if c.ok {
			es = append(es, entry{name: name, mode: modeTree, id: c.tree})
		}
	}
	sc.track.noteVolatile(n)
	if len(es) == 0 && n.parent != nil {
		n.tree, n.ok = oid{}, false
		return nil
	}
	// Written unless there: a tree's existence is checked each time, as
	// pruning (in another process too) may have removed it since.
	id, written, err := sc.objs.write("tree", encodeTree(es))
	if err != nil {
		return err
	}
	sc.written += written
	n.tree, n.ok = id, true
	return nil
}

// dirent is one entry of a directory, with the stat of a file or symlink.
type dirent struct {
	name   string
	typ    fs.FileMode // the type bits: fs.ModeIrregular for what is not recorded
	st     statKey
	linked bool // a file with more than one hard link
}

// file records one file or symlink: from the stat cache when its stat has
// not moved, else read and written as a blob.
func (sc *scan) file(n *dirNode, name, rel, abs string, d dirent) error {
	key := d.st
	if key.mode != modeLink && sc.maxFile > 0 && key.size > sc.maxFile {
		n.large = append(n.large, name)
		return nil
	}
	if c, ok := sc.old[rel]; ok && c.statKey == key {
		sc.cacheSet(rel, c)
		n.files[name] = fileEntry{mode: key.mode, id: c.id, linked: d.linked}
		return nil
	}
	var body []byte
	if key.mode == modeLink {
		t, err := os.Readlink(abs)
		if err != nil {
			return nil
		}
		body = []byte(filepath.ToSlash(t))
	} else {
		f, err := os.Open(abs)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("checkpoint: %w", err)
		}
		// Bounded: a file that grew past the limit since its stat is
		// named as skipped instead.
		body, err = io.ReadAll(io.LimitReader(f, sc.maxFile+1))
		f.Close()
		if err != nil {
			return fmt.Errorf("checkpoint: read %s: %w", abs, err)
		}
		if sc.maxFile > 0 && int64(len(body)) > sc.maxFile {
			n.large = append(n.large, name)
			return nil
		}
	}
	id, written, err := sc.objs.write("blob", body)
	if err != nil {
		return err
	}
	sc.written += written
	if key.mtime < sc.trusted && key.ctime < sc.trusted {
		sc.cacheSet(rel, cached{statKey: key, id: id})
	} else {
		sc.cacheDel(rel)
	}
	n.files[name] = fileEntry{mode: key.mode, id: id, linked: d.linked}
	return nil
}
