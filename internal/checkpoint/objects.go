package checkpoint

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The object store is a git object store written and read in-process:
// loose objects, zlib-compressed, named by the sha1 of their header and
// content, exactly as git writes them. Stores of older mekas (written by
// git itself, and packed by its gc) keep working: their packs are turned
// into loose objects once, when the store is opened (packsToLoose), so
// reading never needs a pack reader or a git process.

// oid is an object id: the sha1 of an object.
type oid [20]byte

func (o oid) String() string { return hex.EncodeToString(o[:]) }

func parseOID(s string) (oid, error) {
	var o oid
	if len(s) != 40 {
		return o, fmt.Errorf("checkpoint: bad object id %q", s)
	}
	if _, err := hex.Decode(o[:], []byte(s)); err != nil {
		return o, fmt.Errorf("checkpoint: bad object id %q", s)
	}
	return o, nil
}

// emptyTree is git's id of the tree with no entries.
var emptyTree = mustOID("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

func mustOID(s string) oid {
	o, err := parseOID(s)
	if err != nil {
		panic(err)
	}
	return o
}

// Tree entry modes, as git writes them.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeLink    = 0o120000
	modeTree    = 0o040000
	modeGitlink = 0o160000 // a nested repository, in trees older mekas wrote: left alone
)

func hashObject(kind string, body []byte) oid {
	h := sha1.New()
	h.Write(fmt.Appendf(nil, "%s %d\x00", kind, len(body)))
	h.Write(body)
	var o oid
	h.Sum(o[:0])
	return o
}

// zlibWriters are reused: a new one allocates about a megabyte. Best
// speed, as git writes loose objects (core.looseCompression).
var zlibWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

// objects is the object directory of one shadow repository.
type objects struct {
	dir string // <git dir>/objects
}

func (s objects) path(o oid) string {
	h := o.String()
	return filepath.Join(s.dir, h[:2], h[2:])
}

func (s objects) has(o oid) bool {
	_, err := os.Lstat(s.path(o))
	return err == nil
}

// write stores an object unless it is there already, returning the bytes
// it added to the store.
func (s objects) write(kind string, body []byte) (oid, int64, error) {
	o := hashObject(kind, body)
	p := s.path(o)
	if _, err := os.Lstat(p); err == nil {
		return o, 0, nil
	}
	var buf bytes.Buffer
	zw := zlibWriters.Get().(*zlib.Writer)
	zw.Reset(&buf)
	fmt.Fprintf(zw, "%s %d\x00", kind, len(body))
	zw.Write(body)
	zw.Close()
	zlibWriters.Put(zw)
	// A temporary name and a rename: a reader never sees half an object,
	// and two writers of one object both succeed. The fan-out directory
	// is made only when missing.
	tmp, err := os.CreateTemp(filepath.Dir(p), "tmp_obj_")
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return o, 0, fmt.Errorf("checkpoint: %w", err)
		}
		tmp, err = os.CreateTemp(filepath.Dir(p), "tmp_obj_")
	}
	if err != nil {
		return o, 0, fmt.Errorf("checkpoint: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return o, 0, fmt.Errorf("checkpoint: write object: %w", err)
	}
	return o, int64(buf.Len()), nil
}

// ErrMissingObject says a checkpoint's content is gone from the store.
var ErrMissingObject = errors.New("checkpoint: object missing from the store")

// read returns an object's kind and content.
func (s objects) read(o oid) (string, []byte, error) {
	f, err := os.Open(s.path(o))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil, fmt.Errorf("%w: %s", ErrMissingObject, o)
	}
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: object %s: %w", o, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return "", nil, fmt.Errorf("checkpoint: object %s: %w", o, err)
	}
	hdr, body, ok := bytes.Cut(b, []byte{0})
	kind, n, ok2 := strings.Cut(string(hdr), " ")
	size, err := strconv.Atoi(n)
	if !ok || !ok2 || err != nil || size != len(body) {
		return "", nil, fmt.Errorf("checkpoint: object %s is corrupt", o)
	}
	return kind, body, nil
}

func (s objects) readKind(o oid, want string) ([]byte, error) {
	kind, body, err := s.read(o)
	if err != nil {
		return nil, err
	}
	if kind != want {
		return nil, fmt.Errorf("checkpoint: object %s is a %s, not a %s", o, kind, want)
	}
	return body, nil
}

// entry is one entry of a tree.
type entry struct {
	name string
	mode uint32
	id   oid
}

// treeLess is git's order of tree entries: by name, a tree's name
// compared as if it ended in "/".
func treeLess(a, b entry) int {
	an, bn := a.name, b.name
	if a.mode == modeTree {
		an += "/"
	}
	if b.mode == modeTree {
		bn += "/"
	}
	return strings.Compare(an, bn)
}

func encodeTree(es []entry) []byte {
	slices.SortFunc(es, treeLess)
	var b []byte
	for _, e := range es {
		b = strconv.AppendUint(b, uint64(e.mode), 8)
		b = append(b, ' ')
		b = append(b, e.name...)
		b = append(b, 0)
		b = append(b, e.id[:]...)
	}
	return b
}

func decodeTree(o oid, b []byte) ([]entry, error) {
	var es []entry
	for len(b) > 0 {
		sp := bytes.IndexByte(b, ' ')
		nul := bytes.IndexByte(b, 0)
		if sp < 0 || nul < sp || len(b) < nul+21 {
			return nil, fmt.Errorf("checkpoint: tree %s is corrupt", o)
		}
		mode, err := strconv.ParseUint(string(b[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: tree %s is corrupt", o)
		}
		e := entry{name: string(b[sp+1 : nul]), mode: uint32(mode)}
		copy(e.id[:], b[nul+1:nul+21])
		es = append(es, e)
		b = b[nul+21:]
	}
	return es, nil
}

func (s objects) tree(o oid) ([]entry, error) {
	if o == emptyTree {
		return nil, nil
	}
	b, err := s.readKind(o, "tree")
	if err != nil {
		return nil, err
	}
	return decodeTree(o, b)
}

// file is one file of a flattened tree.
type file struct {
	mode uint32
	id   oid
}

// walkDiff calls fn for every path (slash-separated, under prefix) whose
// entry differs between trees a and b; a missing side is the zero file.
// Subtrees with one id are not read.
func (s objects) walkDiff(a, b oid, prefix string, fn func(path string, from, to file) error) error {
	if a == b {
		return nil
	}
	var ea, eb []entry
	var err error
	if a != (oid{}) {
		if ea, err = s.tree(a); err != nil {
			return err
		}
	}
	if b != (oid{}) {
		if eb, err = s.tree(b); err != nil {
			return err
		}
	}
	// Entries keyed by name: a name may be a tree on one side and a file
	// on the other, which git's order sorts apart.
	byName := func(es []entry) map[string]entry {
		m := make(map[string]entry, len(es))
		for _, e := range es {
			m[e.name] = e
		}
		return m
	}
	ma, mb := byName(ea), byName(eb)
	names := make([]string, 0, len(ma)+len(mb))
	for n := range ma {
		names = append(names, n)
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		x, y := ma[n], mb[n]
		if x == y {
			continue
		}
		p := prefix + n
		// Subtrees recurse; files (and a nested repository's gitlink,
		// which is never touched) are compared whole.
		var xt, yt oid
		var xf, yf file
		if x.mode == modeTree {
			xt = x.id
		} else if x.mode != 0 && x.mode != modeGitlink {
			xf = file{x.mode, x.id}
		}
		if y.mode == modeTree {
			yt = y.id
		} else if y.mode != 0 && y.mode != modeGitlink {
			yf = file{y.mode, y.id}
		}
		if xf != yf {
			if err := fn(p, xf, yf); err != nil {
				return err
			}
		}
		if xt != yt {
			if err := s.walkDiff(xt, yt, p+"/", fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// reachable adds to seen every object tree t reaches.
func (s objects) reachable(t oid, seen map[oid]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	es, err := s.tree(t)
	if err != nil {
		return err
	}
	for _, e := range es {
		switch e.mode {
		case modeTree:
			if err := s.reachable(e.id, seen); err != nil {
				return err
			}
		case modeGitlink:
		default:
			seen[e.id] = true
		}
	}
	return nil
}

// sweep removes the loose objects not in keep, returning the bytes the
// store then holds.
func (s objects) sweep(keep map[oid]bool) (int64, error) {
	var total int64
	fan, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	for _, d := range fan {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		des, err := os.ReadDir(filepath.Join(s.dir, d.Name()))
		if err != nil {
			return 0, fmt.Errorf("checkpoint: %w", err)
		}
		for _, e := range des {
			p := filepath.Join(s.dir, d.Name(), e.Name())
			o, err := parseOID(d.Name() + e.Name())
			if err == nil && !keep[o] {
				os.Remove(p)
				continue
			}
			if fi, err := e.Info(); err == nil {
				total += fi.Size()
			}
		}
	}
	return total, nil
}

// size is the bytes of the objects held (loose, and packs not converted).
func (s objects) size() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	return total, nil
}
