package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// TrustFile is the file in meka's data directory that lists the trusted
// workspaces.
const TrustFile = "trusted-workspaces.json"

// Trust is the list of workspaces whose hooks may run, kept in meka's
// data directory (outside every workspace, so a repository cannot trust
// itself).
type Trust struct {
	// Path is the file the list is kept in.
	Path string
}

type trustFile struct {
	Dirs []string `json:"dirs"`
}

func (t Trust) load() ([]string, error) {
	data, err := os.ReadFile(t.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f trustFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Path, err)
	}
	return f.Dirs, nil
}

func (t Trust) save(dirs []string) error {
	slices.Sort(dirs)
	data, err := json.MarshalIndent(trustFile{Dirs: dirs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o700); err != nil {
		return err
	}
	tmp := t.Path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, t.Path)
}

// canonical resolves dir to the absolute path trust is keyed by.
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	return real, nil
}

// Add trusts dir.
func (t Trust) Add(dir string) (string, error) {
	d, err := canonical(dir)
	if err != nil {
		return "", err
	}
	dirs, err := t.load()
	if err != nil {
		return "", err
	}
	if !slices.Contains(dirs, d) {
		dirs = append(dirs, d)
	}
	return d, t.save(dirs)
}

// Revoke stops trusting dir; it reports whether dir was trusted.
func (t Trust) Revoke(dir string) (bool, error) {
	d, err := canonical(dir)
	if err != nil {
		d = filepath.Clean(dir) // a removed directory can still be revoked
	}
	dirs, err := t.load()
	if err != nil {
		return false, err
	}
	i := slices.Index(dirs, d)
	if i < 0 {
		return false, nil
	}
	return true, t.save(slices.Delete(dirs, i, i+1))
}

// List returns the trusted directories.
func (t Trust) List() ([]string, error) { return t.load() }

// Trusted reports whether dir's hooks may run: dir is on the list, and
// every settings file of it that has hooks is owned by uid (a file
// someone else can put there is not the person's configuration). why says
// what is missing when it is not.
func (t Trust) Trusted(dir string, files []string, uid int) (ok bool, why string, err error) {
	d, err := canonical(dir)
	if err != nil {
		return false, "", err
	}
	dirs, err := t.load()
	if err != nil {
		return false, "", err
	}
	if !slices.Contains(dirs, d) {
		return false, fmt.Sprintf("the workspace %s is not trusted (meka trust %s)", d, d), nil
	}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return false, "", err
		}
		if owner, ok := fileOwner(fi); ok && owner != uid {
			return false, fmt.Sprintf("%s is owned by another user (uid %d)", f, owner), nil
		}
	}
	return true, "", nil
}

// Files are the workspace settings files that had hooks.
func (s *Set) Files() []string {
	if s == nil {
		return nil
	}
	return s.files
}
