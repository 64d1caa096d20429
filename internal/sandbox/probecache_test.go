package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// probeRuns counts the probes a cache lets run.
type probeRuns struct {
	ns, bwrap int
	nsErr     error
	bwrapID   fileID
}

func (r *probeRuns) namespaces() error { r.ns++; return r.nsErr }
func (r *probeRuns) look() (fileID, error) {
	if r.bwrapID.Path == "" {
		return fileID{}, os.ErrNotExist
	}
	return r.bwrapID, nil
}
func (r *probeRuns) runBwrap() (string, error) {
	r.bwrap++
	if r.bwrapID.Path == "" {
		return "", os.ErrNotExist
	}
	return r.bwrapID.Path, nil
}

// run is one process: a fresh cache over dir asked both probes.
func (r *probeRuns) run(t *testing.T, dir string, key probeKey) {
	t.Helper()
	c := newProbeCache(dir, func() (probeKey, error) { return key, nil })
	if err := c.namespaces(r.namespaces); !errors.Is(err, r.nsErr) {
		t.Fatalf("namespaces: %v", err)
	}
	path, err := c.bwrap(r.look, r.runBwrap)
	if r.bwrapID.Path != "" && (err != nil || path != r.bwrapID.Path) {
		t.Fatalf("bwrap: %q %v", path, err)
	}
}

var baseKey = probeKey{Exe: "/usr/bin/meka", ExeSize: 100, ExeMtime: 7, Kernel: "6.1.0 #1 SMP", UID: 1000}

// A pass is kept: the next run probes nothing, until the binary, the
// kernel or the user changes, or bubblewrap does.
func TestProbeCacheKeyed(t *testing.T) {
	dir := t.TempDir()
	r := &probeRuns{bwrapID: fileID{Path: "/usr/bin/bwrap", Size: 5, Mtime: 9}}
	r.run(t, dir, baseKey)
	if r.ns != 1 || r.bwrap != 1 {
		t.Fatalf("first run probed %d, %d", r.ns, r.bwrap)
	}
	r.run(t, dir, baseKey)
	if r.ns != 1 || r.bwrap != 1 {
		t.Fatalf("a kept pass was probed again: %d, %d", r.ns, r.bwrap)
	}
	for _, tc := range []struct {
		name   string
		change func(*probeKey)
	}{
		{"binary path", func(k *probeKey) { k.Exe = "/opt/meka" }},
		{"binary size", func(k *probeKey) { k.ExeSize++ }},
		{"binary time", func(k *probeKey) { k.ExeMtime++ }},
		{"kernel", func(k *probeKey) { k.Kernel = "6.2.0 #1 SMP" }},
		{"uid", func(k *probeKey) { k.UID = 4242 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := baseKey
			tc.change(&k)
			before := *r
			r.run(t, dir, k)
			if r.ns != before.ns+1 || r.bwrap != before.bwrap+1 {
				t.Fatalf("a changed %s did not probe again: %d, %d", tc.name, r.ns-before.ns, r.bwrap-before.bwrap)
			}
			// What the new key found is kept in its turn.
			r.run(t, dir, k)
			if r.ns != before.ns+1 || r.bwrap != before.bwrap+1 {
				t.Fatalf("the pass under the new key was not kept")
			}
		})
	}
	// Another bubblewrap (upgraded, or first installed) is probed again;
	// the namespace pass still holds.
	r.run(t, dir, baseKey) // back on the base key: probes once more
	before := *r
	r.bwrapID.Mtime++
	r.run(t, dir, baseKey)
	if r.ns != before.ns || r.bwrap != before.bwrap+1 {
		t.Fatalf("a changed bwrap: namespaces %d, bwrap %d more", r.ns-before.ns, r.bwrap-before.bwrap)
	}
}

// A failed probe is not kept: it may have failed for a passing reason.
func TestProbeCacheKeepsNoFailure(t *testing.T) {
	dir := t.TempDir()
	r := &probeRuns{nsErr: errors.New("no user namespaces")}
	r.run(t, dir, baseKey)
	r.run(t, dir, baseKey)
	if r.ns != 2 || r.bwrap != 2 {
		t.Fatalf("failures were kept: %d, %d", r.ns, r.bwrap)
	}
	r.nsErr = nil
	r.run(t, dir, baseKey)
	r.run(t, dir, baseKey)
	if r.ns != 3 {
		t.Fatalf("the pass after a failure: %d probes", r.ns)
	}
}

// A corrupt, truncated, foreign or unreadable file counts as empty: the
// probes run and the file is written again, whole.
func TestProbeCacheCorruptFile(t *testing.T) {
	valid, err := json.Marshal(probeRecord{Version: probeCacheVersion, Key: baseKey, Namespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		put  func(path string) error
	}{
		{"garbage", func(p string) error { return os.WriteFile(p, []byte("\x00\xffnot json"), 0o600) }},
		{"truncated", func(p string) error { return os.WriteFile(p, valid[:len(valid)/2], 0o600) }},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"other version", func(p string) error {
			return os.WriteFile(p, []byte(`{"version":99,"key":`+string(mustJSON(t, baseKey))+`,"namespaces":true}`), 0o600)
		}},
		{"wrong types", func(p string) error { return os.WriteFile(p, []byte(`{"version":"1","namespaces":"yes"}`), 0o600) }},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ProbeCacheName)
			if err := tc.put(path); err != nil {
				t.Fatal(err)
			}
			r := &probeRuns{}
			r.run(t, dir, baseKey)
			if r.ns != 1 {
				t.Fatalf("probes run: %d", r.ns)
			}
			if tc.name == "a directory" {
				return // nothing can replace it; the probes still ran
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rec probeRecord
			if err := json.Unmarshal(data, &rec); err != nil || rec.Key != baseKey || !rec.Namespaces || rec.Version != probeCacheVersion {
				t.Fatalf("not rewritten: %s (%v)", data, err)
			}
			r.run(t, dir, baseKey)
			if r.ns != 1 {
				t.Fatal("the rewritten file was not taken")
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(m) > 0 {
				t.Fatalf("left behind: %v", m)
			}
		})
	}
}

// No directory, or no key for this machine, keeps nothing and probes as
// before.
func TestProbeCacheOff(t *testing.T) {
	r := &probeRuns{}
	var none *probeCache = newProbeCache("", machineKey)
	for range 2 {
		_ = none.namespaces(r.namespaces)
	}
	dir := t.TempDir()
	noKey := newProbeCache(dir, func() (probeKey, error) { return probeKey{}, errors.New("no executable") })
	for range 2 {
		_ = noKey.namespaces(r.namespaces)
	}
	if r.ns != 4 {
		t.Fatalf("probes run: %d, want 4", r.ns)
	}
	if _, err := os.Stat(filepath.Join(dir, ProbeCacheName)); !os.IsNotExist(err) {
		t.Fatalf("a cache without a key wrote: %v", err)
	}
	// The real key names this binary, kernel and user.
	k, err := machineKey()
	if err != nil || k.Exe == "" || k.ExeSize == 0 || k.Kernel == "" || k.UID != os.Geteuid() {
		t.Fatalf("machineKey = %+v, %v", k, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
