package sandbox

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
)

// The machine's probes each start a confined true: a few milliseconds
// alone, tens on a loaded machine, and the first session of every process
// waited for them. What they find changes only with the binary that runs
// the helper, the kernel, or the user, so a passed probe is kept in a file
// keyed on those three and taken as it is until one of them changes. A
// failed probe is never kept: it may have failed for a moment's reason
// (a loaded machine, a full process table), and trying again costs only
// time. A kept pass that no longer holds fails closed: the command's own
// confinement fails and the command does not run.

// ProbeCacheName is the file, in the directory Warm is given, that keeps
// the probes' results across runs.
const ProbeCacheName = "sandbox-probes.json"

// probeCacheVersion changes when the record's meaning does.
const probeCacheVersion = 1

// probeKey is what a kept result holds for.
type probeKey struct {
	// Exe is the running binary (the helper the namespace probe runs),
	// by path, size and modification time.
	Exe      string `json:"exe"`
	ExeSize  int64  `json:"exe_size"`
	ExeMtime int64  `json:"exe_mtime_ns"`
	// Kernel is the kernel's release and build (uname -rv).
	Kernel string `json:"kernel"`
	UID    int    `json:"uid"`
}

// fileID names a file by path, size and modification time.
type fileID struct {
	Path  string `json:"path"`
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime_ns"`
}

// probeRecord is the cache file.
type probeRecord struct {
	Version int      `json:"version"`
	Key     probeKey `json:"key"`
	// Namespaces says the helper's namespace probe passed.
	Namespaces bool `json:"namespaces,omitempty"`
	// Bwrap is the bubblewrap binary whose probe passed.
	Bwrap *fileID `json:"bwrap,omitempty"`
}

// probeCache keeps passed probes in a file. A nil *probeCache keeps
// nothing: every probe runs.
type probeCache struct {
	path string
	// key identifies the machine now; an error keeps nothing.
	key func() (probeKey, error)

	mu     sync.Mutex // guards the fields below
	loaded bool
	keyOK  bool
	now    probeKey
	rec    probeRecord // the file's record when it is for now, else a new one
}

func newProbeCache(dir string, key func() (probeKey, error)) *probeCache {
	if dir == "" {
		return nil
	}
	return &probeCache{path: filepath.Join(dir, ProbeCacheName), key: key}
}

// load reads the file once; the caller holds mu. A file that is missing,
// unreadable, corrupt, of another version or for another key counts as
// empty, and is replaced at the next pass.
func (c *probeCache) load() {
	if c.loaded {
		return
	}
	c.loaded = true
	k, err := c.key()
	if err != nil {
		return
	}
	c.keyOK, c.now = true, k
	c.rec = probeRecord{Version: probeCacheVersion, Key: k}
	data, err := os.ReadFile(c.path)
	if err != nil {
		return
	}
	var r probeRecord
	if json.Unmarshal(data, &r) != nil || r.Version != probeCacheVersion || r.Key != k {
		return
	}
	c.rec = r
}

// namespaces returns nil when a pass is kept for this machine, else runs
// the probe and keeps a pass.
func (c *probeCache) namespaces(run func() error) error {
	if c == nil {
		return run()
	}
	c.mu.Lock()
	c.load()
	kept := c.keyOK && c.rec.Namespaces
	c.mu.Unlock()
	if kept {
		return nil
	}
	err := run()
	if err == nil {
		c.keep(func(r *probeRecord) { r.Namespaces = true })
	}
	return err
}

// bwrap returns the bubblewrap binary when a pass is kept for it (found
// by look, as the probe would find it), else runs the probe and keeps a
// pass.
func (c *probeCache) bwrap(look func() (fileID, error), run func() (string, error)) (string, error) {
	if c == nil {
		return run()
	}
	id, lookErr := look()
	c.mu.Lock()
	c.load()
	kept := lookErr == nil && c.keyOK && c.rec.Bwrap != nil && *c.rec.Bwrap == id
	c.mu.Unlock()
	if kept {
		return id.Path, nil
	}
	path, err := run()
	if err == nil && lookErr == nil && path == id.Path {
		c.keep(func(r *probeRecord) { r.Bwrap = &id })
	}
	return path, err
}

// keep records a pass and rewrites the file, atomically; a file that
// cannot be written keeps nothing and is no error.
func (c *probeCache) keep(set func(*probeRecord)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.keyOK {
		return
	}
	set(&c.rec)
	data, err := json.Marshal(c.rec)
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(c.path), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), ProbeCacheName+".*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), c.path) != nil {
		_ = os.Remove(tmp.Name())
	}
}

// statID identifies the file at path.
func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	return fileID{Path: path, Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}, nil
}

// machineKey identifies this binary, kernel and user.
func machineKey() (probeKey, error) {
	exe, err := os.Executable()
	if err != nil {
		return probeKey{}, err
	}
	id, err := statID(exe)
	if err != nil {
		return probeKey{}, err
	}
	kernel, err := kernelID()
	if err != nil {
		return probeKey{}, err
	}
	return probeKey{Exe: id.Path, ExeSize: id.Size, ExeMtime: id.Mtime, Kernel: kernel, UID: os.Geteuid()}, nil
}
