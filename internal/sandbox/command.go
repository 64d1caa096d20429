package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/internal/sandbox/helper"
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

// Backends: Landlock applied by meka's own helper inside namespaces it
// creates, bubblewrap, and bubblewrap running that helper (both).
const (
	BackendLandlock = "landlock"
	BackendBwrap    = "bwrap"
	BackendBoth     = "bwrap+landlock"
)

// Backends lists every backend, in the order Available prefers them.
var Backends = []string{BackendLandlock, BackendBoth, BackendBwrap}

// ErrNoConfinement means no backend can confine a command on this machine
// with every guarantee its mode needs; a confined mode must then refuse
// to run rather than run under a weaker sandbox.
var ErrNoConfinement = errors.New("no confinement available")

// DefaultWaitDelay bounds how long Wait waits, once a command's context is
// done or the command has exited, for it to die and its pipes to close.
const DefaultWaitDelay = 2 * time.Second

// Available reports which backend confines commands in mode on this
// machine with the network closed, or an error matching ErrNoConfinement
// that says what is missing. Unrestricted needs none and reports "".
func Available(mode Mode) (string, error) { return hostProbe().available(mode, false) }

// AvailableNetwork is Available for commands whose network is open when
// network is set ([permissions] network = true): the network guarantee
// is then not needed.
func AvailableNetwork(mode Mode, network bool) (string, error) {
	return hostProbe().available(mode, network)
}

// Check returns the guarantees of every backend on this machine, in the
// order Available prefers them.
func Check() []Guarantees {
	p := hostProbe()
	out := make([]Guarantees, 0, len(Backends))
	for _, b := range Backends {
		out = append(out, p.guarantees(b))
	}
	return out
}

// Spec is a command to run and its confinement.
type Spec struct {
	// Args is the command line; Args[0] is looked up in Env's PATH.
	Args []string
	Dir  string
	// Env is the complete environment of the command (build it with
	// ConfinedEnv or ScrubEnv); TMPDIR is set to TempDir when given.
	Env  []string
	Mode Mode
	// Writable are the directories (or files) a Workspace command may
	// write; ReadOnly ignores them. Missing ones are skipped.
	Writable []string
	// Protected are paths that stay read-only to a confined command even
	// inside a writable directory: meka's config and data directories.
	// The .git/hooks and .git/config of every writable directory are
	// added. Missing ones are skipped.
	Protected []string
	// Masked are hidden from a confined command, read and write: meka's
	// data and config directories (its database, serve token and logs).
	// A masked path that holds the command's directory is not (the user
	// works there on purpose); writable paths inside one stay writable.
	// Missing ones are skipped.
	Masked []string
	// Visible are paths inside Masked a confined command may still read
	// (the session's own scratchpad and task output), read-only.
	Visible []string
	// Network opens the network to a confined command.
	Network bool
	// TempDir is the command's private temp dir, writable in every mode.
	TempDir string
	// Backend forces a backend; empty picks as Available does.
	Backend string
	// WaitDelay replaces DefaultWaitDelay.
	WaitDelay time.Duration
}

// Command returns a command that runs spec confined to its mode, in a
// process group of its own that is killed when meka dies: canceling ctx
// kills the whole group, and WaitDelay bounds the wait for it to die and
// its pipes to drain. A confined mode with no backend giving every
// guarantee returns an error matching ErrNoConfinement.
//
// Under Landlock the command is the current executable re-run as a helper
// that confines itself and then executes Args: package helper, which this
// package imports, does that in its init, before the rest of the program
// initialises.
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

// probe is what the machine offers, injectable for tests.
type probe struct {
	landlockABI func() int
	bwrap       func() (string, error)
	executable  func() (string, error)
	// namespaces reports whether the helper can run in new user (unless
	// root), mount, PID and network namespaces.
	namespaces func() error
	// off, when set, is why no backend may be used (Unavailable).
	off string
}

// The probes run once per process: what the machine offers does not
// change while meka runs. Passes are kept across runs in the cache Warm
// names (probecache.go).
var (
	probes          atomic.Pointer[probeCache]
	bwrapWorks      = sync.OnceValues(func() (string, error) { return probes.Load().bwrap(lookBwrap, probeBwrap) })
	namespacesWork  = sync.OnceValue(func() error { return probes.Load().namespaces(probeNamespaces) })
	hostProbeCached = sync.OnceValue(func() probe {
		if why := forced.Load(); why != nil {
			return forcedProbe(*why)
		}
		return probe{landlockABI: landlockABI, bwrap: bwrapWorks, executable: os.Executable, namespaces: namespacesWork}
	})
)

func hostProbe() probe { return hostProbeCached() }

// Warm runs the machine's probes in the background (each starts a
// confined true, a few milliseconds), so that the first session's
// description of its confinement, or its first command, waits for less
// of them; whoever needs a probe before it is done waits for it. The
// helper's goes first, alone: it decides the preferred backend, and
// bubblewrap's is needed only where that one cannot confine.
//
// cacheDir, when not empty, keeps the probes' passes across runs in
// ProbeCacheName there, for as long as the binary, the kernel and the
// user stay the same; a process whose first probe ran before Warm keeps
// nothing. Only the first call counts.
func Warm(cacheDir string) {
	warmOnce.Do(func() {
		probes.Store(newProbeCache(cacheDir, machineKey))
		p := hostProbe()
		go func() {
			_ = p.namespaces()
			_, _ = p.bwrap()
		}()
	})
}

var warmOnce sync.Once

// guarantees works out what backend can promise here.
func (p probe) guarantees(backend string) Guarantees {
	g := Guarantees{Backend: backend}
	if p.off != "" {
		g.Missing = append(g.Missing, p.off)
		return g
	}
	abi := p.landlockABI()
	_, exeErr := p.executable()
	landlock := abi >= 1 && exeErr == nil
	switch backend {
	case BackendLandlock:
		if !landlock {
			g.Missing = append(g.Missing, noLandlock(abi, exeErr))
			return g
		}
		g.Writes, g.Secrets = true, true // the ptrace scope holds from ABI 1
		g.Signals = abi >= 6
		if err := p.namespaces(); err != nil {
			g.Missing = append(g.Missing, fmt.Sprintf("no namespaces, so no read-only mounts for metadata and no closed network (%v)", err))
			if !g.Signals {
				g.Missing = append(g.Missing, fmt.Sprintf("Landlock ABI %d has no signal scope (needs 6)", abi))
			}
			return g
		}
		g.Metadata, g.Network, g.Signals = true, true, true
	case BackendBwrap, BackendBoth:
		if _, err := p.bwrap(); err != nil {
			g.Missing = append(g.Missing, fmt.Sprintf("bubblewrap cannot run (%v)", err))
			return g
		}
		if backend == BackendBoth && !landlock {
			g.Missing = append(g.Missing, noLandlock(abi, exeErr))
			return g
		}
		g.Writes, g.Metadata, g.Signals, g.Network, g.Secrets = true, true, true, true, true
	default:
		g.Missing = append(g.Missing, "unknown backend")
	}
	return g
}

func noLandlock(abi int, exeErr error) string {
	if abi < 1 {
		return "the kernel offers no Landlock"
	}
	return fmt.Sprintf("meka cannot find its own executable to run the helper (%v)", exeErr)
}

func (p probe) available(mode Mode, network bool) (string, error) {
	if mode == Unrestricted {
		return "", nil
	}
	var why []string
	for _, b := range Backends {
		g := p.guarantees(b)
		if g.Holds(network) {
			return b, nil
		}
		why = append(why, g.String())
	}
	return "", fmt.Errorf("%w: %s", ErrNoConfinement, strings.Join(why, "; "))
}

// confinement is what running a spec takes: the program, its environment
// and, for a confined mode, the backend and the paths it confines to.
type confinement struct {
	path    string
	env     []string
	backend string // "" unconfined
	// writable are the canonical paths the command may write, its temp
	// dir apart; protected, sockets, masked and visible are as for
	// bwrapPlan.
	writable, protected, sockets []string
	masked, visible              []string
	temp                         string // canonical, "" without one
	network                      bool
}

// confine works out how spec runs, refusing a confined mode no backend
// here gives every guarantee.
func (p probe) confine(spec Spec) (confinement, error) {
	if len(spec.Args) == 0 {
		return confinement{}, errors.New("no arguments")
	}
	path, err := lookPath(spec.Args[0], getEnv(spec.Env, "PATH"), spec.Dir)
	if err != nil {
		return confinement{}, err
	}
	c := confinement{path: path, env: append([]string{}, spec.Env...)} // non-nil: nil would inherit ours
	if spec.TempDir != "" {
		c.env = setEnv(c.env, "TMPDIR", spec.TempDir)
	}
	switch spec.Mode {
	case Unrestricted:
		return c, nil
	case ReadOnly, Workspace:
	default:
		return confinement{}, fmt.Errorf("unknown mode %v", spec.Mode)
	}
	c.backend = spec.Backend
	if c.backend == "" {
		if c.backend, err = p.available(spec.Mode, spec.Network); err != nil {
			return confinement{}, err
		}
	} else if g := p.guarantees(c.backend); !g.Holds(spec.Network) {
		return confinement{}, fmt.Errorf("%w: %s", ErrNoConfinement, g)
	}
	if spec.Mode == Workspace {
		c.writable = existing(spec.Writable)
	}
	if t := existing([]string{spec.TempDir}); len(t) == 1 && !slices.Contains(c.writable, t[0]) {
		c.temp = t[0]
	}
	c.masked, c.visible = maskedPaths(spec.Masked, spec.Visible, spec.Dir)
	c.protected = unmasked(protectedPaths(c.all(), spec.Protected), c.masked, c.all())
	c.network = spec.Network
	if !spec.Network {
		c.sockets = unmasked(outsideSockets(c.all()), c.masked, nil)
	}
	return c, nil
}

// maskedPaths returns the canonical paths of masked that exist and do not
// hold dir, and those of visible inside them.
func maskedPaths(masked, visible []string, dir string) (m, v []string) {
	d, _ := Canonical(dir)
	for _, p := range existing(masked) {
		if d == "" || !Within(d, p) {
			m = append(m, p)
		}
	}
	for _, p := range existing(visible) {
		if under(p, m) {
			v = append(v, p)
		}
	}
	return m, v
}

// unmasked drops from ps the paths a mask hides, but for those inside
// what shows through it (keep): a path there needs no mount of its own,
// and one over a mask would show it again.
func unmasked(ps, masked, keep []string) []string {
	var out []string
	for _, p := range ps {
		if !under(p, masked) || slices.ContainsFunc(keep, func(k string) bool { return Within(p, k) && under(k, masked) }) {
			out = append(out, p)
		}
	}
	return out
}

// all is every path the command may write, its temp dir included.
func (c confinement) all() []string {
	if c.temp == "" {
		return c.writable
	}
	return append(c.writable[:len(c.writable):len(c.writable)], c.temp)
}

func (p probe) command(ctx context.Context, spec Spec) (*exec.Cmd, error) {
	c, err := p.confine(spec)
	if err != nil {
		return nil, fmt.Errorf("build command: %w", err)
	}
	return p.build(ctx, spec, c), nil
}

// build returns the command that runs spec confined as c says.
func (p probe) build(ctx context.Context, spec Spec, c confinement) *exec.Cmd {
	var cmd *exec.Cmd
	ns := nsNone
	if c.backend == "" {
		cmd = exec.CommandContext(ctx, c.path)
		cmd.Args = spec.Args
	} else {
		hs := helper.Spec{Path: c.path, Writable: c.all()}
		cmd, ns = p.wrap(ctx, c, hs, c.all(), spec.Dir, spec.Args)
	}
	cmd.Dir = spec.Dir
	cmd.Env = c.env
	delay := spec.WaitDelay
	if delay <= 0 {
		delay = DefaultWaitDelay
	}
	setGroup(cmd, delay, ns)
	return cmd
}

// wrap returns the command that runs the helper hs (with args, the
// command's, for a one-shot helper) under c's backend, and the namespaces
// it must start in: Landlock's helper makes its own mounts in namespaces
// meka creates; bubblewrap binds writable and runs the program itself,
// or the helper for Landlock (both) or to serve as a launcher. wrap fills
// in what c decides (network, protected paths, sockets, ids).
func (p probe) wrap(ctx context.Context, c confinement, hs helper.Spec, writable []string, dir string, args []string) (*exec.Cmd, nsKind) {
	exe, _ := p.executable() // guarantees checked it is there
	hs.Network = c.network
	switch c.backend {
	case BackendLandlock:
		hs.Mount, hs.Landlock = true, true
		hs.Protected, hs.Sockets = c.protected, c.sockets
		if !hs.Serve { // a launcher masks for each command
			hs.Masked, hs.Visible = c.masked, c.visible
		}
		if uid := os.Geteuid(); uid != 0 {
			hs.MapIDs, hs.UID, hs.GID = true, uid, os.Getegid()
		}
		ns := nsAll
		if c.network {
			ns = nsNoNet
		}
		return exec.CommandContext(ctx, exe, hs.Args(args)...), ns
	default: // BackendBwrap, BackendBoth: confine checked it is one
		bwrap, _ := p.bwrap()
		plan := bwrapPlan{writable: writable, protected: c.protected, sockets: c.sockets, network: c.network,
			dropCaps: os.Geteuid() == 0, launcher: hs.Serve, dir: dir, path: hs.Path, args: args}
		if !hs.Serve { // a launcher masks for each command
			plan.masked, plan.visible = c.masked, c.visible
		}
		if c.backend == BackendBoth || hs.Serve {
			hs.Landlock = c.backend == BackendBoth
			plan.path = exe
			plan.args = append([]string{exe}, hs.Args(args)...)
		}
		return exec.CommandContext(ctx, bwrap, bwrapArgs(plan)...), nsNone
	}
}

// existing returns the canonical form of each path of ps that exists.
func existing(ps []string) []string {
	var out []string
	for _, d := range ps {
		c, err := Canonical(d)
		if err != nil {
			continue
		}
		if _, err := os.Lstat(c); err != nil {
			continue // nothing there to write; creating it needs its parent
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// protectedPaths lists what stays read-only inside the writable paths:
// extra (meka's config and data directories) and each writable
// directory's .git/hooks and .git/config, those that exist and lie inside
// a writable path (outside one they are read-only anyway).
func protectedPaths(writable, extra []string) []string {
	cands := slices.Clone(extra)
	for _, w := range writable {
		git := GitProtected(w)
		// A repository without a hooks directory would let a command
		// create one; an empty one, read-only, is what git makes anyway.
		if fi, err := os.Lstat(filepath.Dir(git[0])); err == nil && fi.IsDir() {
			_ = os.Mkdir(git[0], 0o755)
		}
		cands = append(cands, git...)
	}
	var out []string
	for _, c := range existing(cands) {
		if under(c, writable) {
			out = append(out, c)
		}
	}
	return out
}

// GitProtected returns the paths of root's repository that make git run
// code, .git/hooks and .git/config: neither a confined command nor a file
// tool may write them even though root is writable.
func GitProtected(root string) []string {
	return []string{filepath.Join(root, ".git", "hooks"), filepath.Join(root, ".git", "config")}
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

// lookBwrap finds the bubblewrap binary probeBwrap would run.
func lookBwrap() (fileID, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return fileID{}, err
	}
	return statID(p)
}

func probeBwrap() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", err
	}
	args := bwrapArgs(bwrapPlan{dropCaps: os.Geteuid() == 0, path: "true", args: []string{"true"}})
	if out, err := exec.Command(p, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("probe bwrap: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return p, nil
}
