package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Mode is how a command is confined. The zero value is the strictest.
type Mode int

const (
	// ReadOnly commands read everything and write nothing but their
	// private temp dir.
	ReadOnly Mode = iota
	// Workspace commands write only inside the writable roots and their
	// temp dir.
	Workspace
	// Unrestricted commands are not confined.
	Unrestricted
)

func (m Mode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case Workspace:
		return "workspace"
	case Unrestricted:
		return "unrestricted"
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// Backends Available reports.
const (
	BackendLandlock = "landlock"
	BackendBwrap    = "bwrap"
)

// ErrNoConfinement means neither Landlock nor bubblewrap can confine a
// command on this machine; a confined mode must then refuse to run rather
// than run unconfined.
var ErrNoConfinement = errors.New("no confinement available: the kernel offers no Landlock and bubblewrap is missing or cannot run")

// DefaultWaitDelay bounds how long Wait waits, once a command's context is
// done or the command has exited, for it to die and its pipes to close.
const DefaultWaitDelay = 2 * time.Second

// Available reports which backend confines commands in mode on this
// machine: "landlock", else "bwrap", else ErrNoConfinement. Unrestricted
// needs none and reports "".
func Available(mode Mode) (string, error) { return hostProbe().available(mode) }

// Spec is a command to run and its confinement.
type Spec struct {
	// Args is the command line; Args[0] is looked up in Env's PATH.
	Args []string
	Dir  string
	// Env is the complete environment of the command (scrub it first with
	// ScrubEnv); TMPDIR is set to TempDir when that is given.
	Env  []string
	Mode Mode
	// Writable are the directories (or files) a Workspace command may
	// write; ReadOnly ignores them. Missing ones are skipped.
	Writable []string
	// TempDir is the command's private temp dir, writable in every mode.
	TempDir string
	// Backend forces "landlock" or "bwrap"; empty picks as Available does.
	Backend string
	// WaitDelay replaces DefaultWaitDelay.
	WaitDelay time.Duration
}

// Command returns a command that runs spec confined to its mode, in a
// process group of its own: canceling ctx kills the whole group, and
// WaitDelay bounds the wait for it to die and its pipes to drain. A
// confined mode with no usable backend returns ErrNoConfinement.
//
// Under Landlock the command is the current executable re-run as a helper
// that confines itself and then executes Args, so the program must call
// RunHelperIfRequested first thing in main (and tests that run confined
// commands, in TestMain).
func Command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	return hostProbe().command(ctx, spec)
}

// KillGroup kills every process left in cmd's process group, such as the
// background children of a command that has exited.
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if err := killGroup(cmd.Process.Pid); !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// helperMarker is the first argument that makes the current binary the
// confining helper instead of itself.
const helperMarker = "__meka_sandbox"

// helperSpec is what Command hands the helper, as its second argument.
type helperSpec struct {
	// Path is the program to execute once confined.
	Path string `json:"path"`
	// Writable are the canonical paths writes stay allowed beneath.
	Writable []string `json:"writable"`
}

// probe is what the machine offers, injectable for tests.
type probe struct {
	landlockABI func() int
	bwrap       func() (string, error)
	executable  func() (string, error)
}

// bwrapWorks runs bwrap once per process: whether it can create its
// namespaces is a fact about the machine that does not change.
var bwrapWorks = sync.OnceValues(probeBwrap)

func hostProbe() probe {
	return probe{landlockABI: landlockABI, bwrap: bwrapWorks, executable: os.Executable}
}

func (p probe) available(mode Mode) (string, error) {
	if mode == Unrestricted {
		return "", nil
	}
	if p.landlockUsable() {
		return BackendLandlock, nil
	}
	if _, err := p.bwrap(); err == nil {
		return BackendBwrap, nil
	}
	return "", ErrNoConfinement
}

func (p probe) landlockUsable() bool {
	if p.landlockABI() < 1 {
		return false
	}
	_, err := p.executable()
	return err == nil
}

func (p probe) command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	if len(spec.Args) == 0 {
		return nil, errors.New("build command: no arguments")
	}
	path, err := lookPath(spec.Args[0], getEnv(spec.Env, "PATH"), spec.Dir)
	if err != nil {
		return nil, fmt.Errorf("build command: %w", err)
	}
	env := append([]string{}, spec.Env...) // non-nil: nil would inherit ours
	if spec.TempDir != "" {
		env = setEnv(env, "TMPDIR", spec.TempDir)
	}
	var cmd *exec.Cmd
	switch spec.Mode {
	case Unrestricted:
		cmd = exec.CommandContext(ctx, path)
		cmd.Args = spec.Args
	case ReadOnly, Workspace:
		backend := spec.Backend
		if backend == "" {
			if backend, err = p.available(spec.Mode); err != nil {
				return nil, fmt.Errorf("build command: %w", err)
			}
		}
		writable := confinedWritable(spec)
		switch backend {
		case BackendLandlock:
			if !p.landlockUsable() {
				return nil, fmt.Errorf("build command: landlock: %w", ErrNoConfinement)
			}
			exe, _ := p.executable()
			hs, err := json.Marshal(helperSpec{Path: path, Writable: writable})
			if err != nil {
				return nil, fmt.Errorf("build command: %w", err)
			}
			cmd = exec.CommandContext(ctx, exe, append([]string{helperMarker, string(hs)}, spec.Args...)...)
		case BackendBwrap:
			bwrap, err := p.bwrap()
			if err != nil {
				return nil, fmt.Errorf("build command: bwrap: %w", ErrNoConfinement)
			}
			cmd = exec.CommandContext(ctx, bwrap, bwrapArgs(writable, spec.Dir, path, spec.Args)...)
		default:
			return nil, fmt.Errorf("build command: unknown backend %q", backend)
		}
	default:
		return nil, fmt.Errorf("build command: unknown mode %v", spec.Mode)
	}
	cmd.Dir = spec.Dir
	cmd.Env = env
	delay := spec.WaitDelay
	if delay <= 0 {
		delay = DefaultWaitDelay
	}
	setGroup(cmd, delay)
	return cmd, nil
}

// confinedWritable lists, canonical and existing, what a confined command
// may write.
func confinedWritable(spec Spec) []string {
	var dirs []string
	if spec.Mode == Workspace {
		dirs = append(dirs, spec.Writable...)
	}
	if spec.TempDir != "" {
		dirs = append(dirs, spec.TempDir)
	}
	var out []string
	for _, d := range dirs {
		c, err := Canonical(d)
		if err != nil {
			continue
		}
		if _, err := os.Stat(c); err != nil {
			continue // nothing there to write; creating it needs its parent
		}
		out = append(out, c)
	}
	return out
}

// bwrapArgs confines with bubblewrap: the whole tree read-only, a private
// /dev, and the writable paths bound read-write over it.
func bwrapArgs(writable []string, dir, path string, args []string) []string {
	out := []string{"--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev"}
	for _, w := range writable {
		out = append(out, "--bind", w, w)
	}
	if dir != "" {
		out = append(out, "--chdir", dir)
	}
	out = append(out, "--", path)
	return append(out, args[1:]...)
}

// defaultPath is searched when the environment has no PATH, as sh does.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// lookPath finds name in pathEnv without consulting our own environment:
// the command's environment is what it will run with.
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return name, nil
	}
	if pathEnv == "" {
		pathEnv = defaultPath
	}
	for d := range strings.SplitSeq(pathEnv, ":") {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("look up %s: %w", name, fs.ErrNotExist)
}

func probeBwrap() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", err
	}
	if out, err := exec.Command(p, "--ro-bind", "/", "/", "--dev", "/dev", "true").CombinedOutput(); err != nil {
		return "", fmt.Errorf("probe bwrap: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return p, nil
}
