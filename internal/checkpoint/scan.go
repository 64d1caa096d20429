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

// A snapshot stats every file of the root (a few milliseconds for ten
// thousand) and reads only those whose stat differs from the stat cache:
// path, size, mtime, ctime, inode and mode → blob, as git's index keeps
// them. Trees are built in-process; only new objects are written.

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

// scan is one snapshot's walk of a root.
type scan struct {
	root    string
	objs    objects
	maxFile int64
	old     map[string]cached
	next    map[string]cached
	trusted int64    // unix ns: stat times before this are cached
	skipped []string // slash-separated, relative to root
	written int64    // bytes of new objects
	dirty   bool     // next has entries old lacks or has otherwise
}

// worktreesDir holds meka's own worktrees inside a root: other sessions'
// files, never snapshotted.
const worktreesDir = ".meka/worktrees"

// dir snapshots the directory at rel ("" for the root) and returns its
// tree; ok is false when it holds nothing to record (git keeps no empty
// directories).
func (sc *scan) dir(rel string, ign ignoreStack) (oid, bool, error) {
	abs := sc.root
	if rel != "" {
		abs = filepath.Join(sc.root, filepath.FromSlash(rel))
	}
	des, err := readDir(abs)
	if err != nil {
		if rel != "" && (errors.Is(err, os.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return oid{}, false, nil // gone or unreadable mid-walk
		}
		return oid{}, false, fmt.Errorf("checkpoint: %w", err)
	}
	for _, d := range des {
		if d.name == ".gitignore" && d.typ.IsRegular() {
			if b, err := os.ReadFile(filepath.Join(abs, ".gitignore")); err == nil {
				ign = ign.push(parseIgnore(rel, b))
			}
			break
		}
	}
	es := make([]entry, 0, len(des))
	for _, d := range des {
		name := d.name
		if name == ".git" {
			continue
		}
		crel := name
		if rel != "" {
			crel = rel + "/" + name
		}
		t := d.typ
		switch {
		case t.IsDir():
			if crel == worktreesDir || ign.ignored(crel, name, true) {
				continue
			}
			// A nested repository is its own: git records only its
			// commit, and meka leaves it alone.
			if _, err := os.Lstat(filepath.Join(abs, name, ".git")); err == nil {
				continue
			}
			id, ok, err := sc.dir(crel, ign)
			if err != nil {
				return oid{}, false, err
			}
			if ok {
				es = append(es, entry{name: name, mode: modeTree, id: id})
			}
		case t.IsRegular() || t&fs.ModeSymlink != 0:
			if ign.ignored(crel, name, false) {
				continue
			}
			id, ok, err := sc.file(crel, filepath.Join(abs, name), d.st)
			if err != nil {
				return oid{}, false, err
			}
			if ok {
				es = append(es, entry{name: name, mode: d.st.mode, id: id})
			}
		}
	}
	if len(es) == 0 && rel != "" {
		return oid{}, false, nil
	}
	// Written unless there: a tree's existence is checked each time, as
	// pruning (in another process too) may have removed it since.
	id, n, err := sc.objs.write("tree", encodeTree(es))
	if err != nil {
		return oid{}, false, err
	}
	sc.written += n
	return id, true, nil
}

// dirent is one entry of a directory, with the stat of a file or symlink.
type dirent struct {
	name string
	typ  fs.FileMode // the type bits: fs.ModeIrregular for what is not recorded
	st   statKey
}

// file records one file or symlink: from the stat cache when its stat has
// not moved, else read and written as a blob.
func (sc *scan) file(rel, abs string, key statKey) (oid, bool, error) {
	if key.mode != modeLink && sc.maxFile > 0 && key.size > sc.maxFile {
		sc.skipped = append(sc.skipped, rel)
		return oid{}, false, nil
	}
	if c, ok := sc.old[rel]; ok && c.statKey == key {
		sc.next[rel] = c
		return c.id, true, nil
	}
	var body []byte
	if key.mode == modeLink {
		t, err := os.Readlink(abs)
		if err != nil {
			return oid{}, false, nil
		}
		body = []byte(filepath.ToSlash(t))
	} else {
		f, err := os.Open(abs)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return oid{}, false, nil
			}
			return oid{}, false, fmt.Errorf("checkpoint: %w", err)
		}
		// Bounded: a file that grew past the limit since its stat is
		// named as skipped instead.
		body, err = io.ReadAll(io.LimitReader(f, sc.maxFile+1))
		f.Close()
		if err != nil {
			return oid{}, false, fmt.Errorf("checkpoint: read %s: %w", abs, err)
		}
		if sc.maxFile > 0 && int64(len(body)) > sc.maxFile {
			sc.skipped = append(sc.skipped, rel)
			return oid{}, false, nil
		}
	}
	id, n, err := sc.objs.write("blob", body)
	if err != nil {
		return oid{}, false, err
	}
	sc.written += n
	if key.mtime < sc.trusted && key.ctime < sc.trusted {
		sc.next[rel] = cached{statKey: key, id: id}
		sc.dirty = true
	}
	return id, true, nil
}
