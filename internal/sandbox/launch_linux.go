package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/sandbox/helper"
)

// Launchers: at most maxLaunchers run at once (a session has one per
// level and set of roots it uses; past that, commands start as Command
// builds them), and one that has started nothing for launcherIdle ends.
const (
	maxLaunchers = 8
	launcherIdle = 5 * time.Minute
)

// launcherStartup bounds the wait for a launcher to say it serves (a
// variable for the test of one that never does).
var launcherStartup = 10 * time.Second

// pool holds the running launchers, one per confinement.
var pool = &launchers{m: map[string]*launcher{}, failed: map[string]bool{}}

type launchers struct {
	mu     sync.Mutex
	m      map[string]*launcher // by key
	failed map[string]bool      // keys whose launcher could not start
	uses   uint64               // launchers handed out, for their used
}

// launcher is a helper serving commands (helper.Spec.Serve).
type launcher struct {
	key  string
	ctrl *net.UnixConn
	cmd  *exec.Cmd
	// running counts the commands started and not yet waited for; idle
	// ends the launcher once none has run for launcherIdle. Both are
	// guarded by pool.mu.
	running int
	idle    *time.Timer
	used    uint64 // pool.uses when last handed out, guarded by pool.mu
	// answer bounds the wait for it to take a command (launcherStartup
	// unless the test of a hung launcher shortens it for that one alone,
	// so its replacement keeps the whole bound on a loaded machine).
	answer time.Duration
}

// launch runs spec, confined as c says, through a launcher. ok is false
// when no launcher can take it (unconfined, a temp dir MkShellTemp did
// not make, a launcher that cannot start here): the caller then runs it
// as Command builds it.
func (p probe) launch(ctx context.Context, c confinement, spec Spec, dir string, stdout, stderr io.Writer) (r *Running, ok bool, err error) {
	if c.backend == "" {
		return nil, false, nil
	}
	root := ""
	if c.temp != "" {
		if root = shellTempRoot(); root == "" || filepath.Dir(c.temp) != root {
			return nil, false, nil
		}
	}
	for range 2 { // a launcher that died meanwhile is replaced once
		l := pool.get(c, root, p)
		if l == nil {
			return nil, false, nil
		}
		r, err := l.start(ctx, c, spec, dir, stdout, stderr)
		if errors.Is(err, errLauncherGone) {
			pool.release(l)
			pool.drop(l)
			continue
		}
		if err != nil {
			pool.release(l)
			return nil, true, err
		}
		return r, true, nil
	}
	return nil, false, nil
}

// key names a confinement's launcher: its backend, network and writable
// paths; what each command brings (program, environment, temp dir) and
// what the launcher applies afresh for each (protected paths, sockets to
// mask) apart. Each path carries the identity of the directory there:
// the launcher's mounts hold the directories they were made on, so one
// replaced since (a workspace cloned again) needs a new launcher.
func (c confinement) key(root string) string {
	var b strings.Builder
	field := func(tag string, vals ...string) {
		for _, v := range vals {
			b.WriteString(tag)
			b.WriteString(v)
			if tag != "b" && tag != "n" && v != "" {
				b.WriteString(identity(v))
			}
			b.WriteByte(0)
		}
	}
	field("b", c.backend)
	field("w", c.writable...)
	field("t", root)
	field("n", strconv.FormatBool(c.network))
	return b.String()
}

// identity tells the file at path from one made there after it: its
// inode, which a file system may give again at once, and its birth time
// where the file system keeps one (a directory's change time would
// change with every file made in it).
func identity(path string) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return ""
	}
	id := fmt.Sprintf("@%d:%d:%d", st.Dev_major, st.Dev_minor, st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(":%d.%d", st.Btime.Sec, st.Btime.Nsec)
	}
	return id
}

// get returns the launcher for c, started if need be, counted as running
// one more command; nil if none can be had.
func (ls *launchers) get(c confinement, root string, p probe) *launcher {
	key := c.key(root)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.uses++
	if l := ls.m[key]; l != nil {
		l.running++
		l.used = ls.uses
		l.idle.Stop()
		return l
	}
	if ls.failed[key] {
		return nil
	}
	if len(ls.m) >= maxLaunchers && !ls.evictIdle() {
		return nil
	}
	l, err := p.startLauncher(c, root)
	if err != nil {
		ls.failed[key] = true
		return nil
	}
	l.key = key
	l.running, l.used = 1, ls.uses
	l.idle = time.AfterFunc(launcherIdle, func() { ls.closeIdle(l) })
	l.idle.Stop()
	ls.m[key] = l
	go func() {
		l.cmd.Wait()
		ls.drop(l)
	}()
	return l
}

// evictIdle ends the launcher running nothing that was used longest ago;
// ls.mu is held.
func (ls *launchers) evictIdle() bool {
	var oldest *launcher
	for _, l := range ls.m {
		if l.running == 0 && (oldest == nil || l.used < oldest.used) {
			oldest = l
		}
	}
	if oldest == nil {
		return false
	}
	delete(ls.m, oldest.key)
	oldest.idle.Stop()
	oldest.ctrl.Close()
	return true
}

// release counts one command of l's as waited for.
func (ls *launchers) release(l *launcher) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.running--; l.running == 0 {
		l.idle.Reset(launcherIdle)
	}
}

// closeIdle ends l if it still runs nothing.
func (ls *launchers) closeIdle(l *launcher) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l.running == 0 && ls.m[l.key] == l {
		delete(ls.m, l.key)
		l.ctrl.Close()
	}
}

// drop forgets l, which has died or failed, and ends it: its commands,
// whose PID namespaces lie inside its own, die with it (under bubblewrap,
// the launcher dies with bubblewrap).
func (ls *launchers) drop(l *launcher) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.m[l.key] == l {
		delete(ls.m, l.key)
	}
	l.ctrl.Close()
	l.cmd.Process.Kill() // by pidfd: never another process; gone is no harm
}

// startLauncher starts a helper that confines itself as c says, with
// root (its commands' temp dirs) writable, and waits until it serves.
func (p probe) startLauncher(c confinement, root string) (*launcher, error) {
	ctrl, theirs, err := socketPair(syscall.SOCK_SEQPACKET)
	if err != nil {
		return nil, err
	}
	defer theirs.Close()
	writable := c.writable
	if root != "" {
		// Last, as the helper binds it: over any writable path it lies in.
		writable = append(writable[:len(writable):len(writable)], root)
	}
	hs := helper.Spec{Writable: c.writable, Serve: true, TempRoot: root}
	cmd, ns := p.wrap(context.Background(), c, hs, writable, "/", nil)
	cmd.SysProcAttr = sysProcAttr(ns)
	var stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stderr = "/", []string{}, &limitedWriter{w: &stderr, n: 4096}
	cmd.ExtraFiles = []*os.File{theirs}
	if err := cmd.Start(); err != nil {
		ctrl.Close()
		return nil, err
	}
	theirs.Close()
	ctrl.SetReadDeadline(time.Now().Add(launcherStartup))
	var b [4096]byte
	n, err := ctrl.Read(b[:])
	ctrl.SetReadDeadline(time.Time{})
	if err == nil && n == 1 && b[0] == 'r' {
		return &launcher{ctrl: ctrl, cmd: cmd, answer: launcherStartup}, nil
	}
	ctrl.Close()
	killGroup(cmd.Process.Pid)
	cmd.Wait()
	why := strings.TrimSpace(stderr.String())
	if n > 1 && b[0] == 'e' {
		why = string(b[1:n])
	} else if err != nil && why == "" {
		why = err.Error()
	}
	return nil, fmt.Errorf("start launcher: %s", why)
}

// start has l start one command, tracked in dir.
func (l *launcher) start(ctx context.Context, c confinement, spec Spec, dir string, stdout, stderr io.Writer) (*Running, error) {
	delay := spec.WaitDelay
	if delay <= 0 {
		delay = DefaultWaitDelay
	}
	for _, s := range append(spec.Args[:len(spec.Args):len(spec.Args)], c.env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, errors.New("start command: an argument or environment entry holds a NUL byte")
		}
	}
	r := &Running{delay: delay, tracked: track(dir)}
	env := c.env
	if r.tracked.token != "" {
		env = append(env[:len(env):len(env)], r.tracked.env())
	}
	conn, theirs, err := socketPair(syscall.SOCK_STREAM)
	if err != nil {
		r.tracked.Forget()
		return nil, fmt.Errorf("start command: %w", err)
	}
	fail := func(err error, writers []*os.File) (*Running, error) {
		conn.Close()
		r.closePipes(writers)
		r.tracked.Forget()
		return nil, err
	}
	writers, err := r.pipes(stderr != nil)
	if err != nil {
		theirs.Close()
		return fail(fmt.Errorf("start command: %w", err), nil)
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		theirs.Close()
		return fail(fmt.Errorf("start command: %w", err), writers)
	}
	// A launcher that does not take the command or answer in time (it
	// hangs, or was stopped) counts as gone: launch ends it and tries
	// another.
	deadline := time.Now().Add(l.answer)
	rights := syscall.UnixRights(int(theirs.Fd()), int(devNull.Fd()), int(writers[0].Fd()), int(writers[len(writers)-1].Fd()))
	l.ctrl.SetWriteDeadline(deadline)
	_, _, err = l.ctrl.WriteMsgUnix([]byte{'c'}, rights, nil)
	theirs.Close()
	devNull.Close()
	if err != nil {
		return fail(errLauncherGone, writers)
	}

	var req bytes.Buffer
	field := func(tag byte, vals ...string) {
		for _, v := range vals {
			req.WriteByte(tag)
			req.WriteByte('=')
			req.WriteString(v)
			req.WriteByte(0)
		}
	}
	field('p', c.path)
	// As exec.Cmd would: the directory relative to meka's, or meka's.
	if wd, err := filepath.Abs(spec.Dir); err == nil {
		field('d', wd)
	}
	if c.temp != "" {
		field('t', c.temp)
	}
	field('r', c.protected...)
	field('s', c.sockets...)
	field('h', c.masked...)
	field('v', c.visible...)
	field('a', spec.Args...)
	field('e', env...)
	conn.SetDeadline(deadline)
	if err := writeMsg(conn, 'q', req.Bytes()); err != nil {
		return fail(errLauncherGone, writers)
	}
	kind, body, err := readMsg(conn)
	conn.SetDeadline(time.Time{})
	switch {
	case err != nil:
		return fail(errLauncherGone, writers)
	case kind == 'f':
		return fail(fmt.Errorf("start command: %s", body), writers)
	case kind != 's':
		return fail(fmt.Errorf("start command: the launcher answered %q", kind), writers)
	}
	r.copyOut(writers, stdout, stderr)
	// A cancel ends the command: the launcher kills it when meka stops
	// writing, and still reports how it ended, within the command's
	// WaitDelay; a launcher that does not is ended, and the command with
	// it.
	stop := context.AfterFunc(ctx, func() {
		conn.CloseWrite()
		conn.SetReadDeadline(time.Now().Add(delay))
	})
	r.proc = &launched{conn: conn, l: l, stop: stop}
	return r, nil
}

// launched is a command a launcher runs.
type launched struct {
	conn *net.UnixConn
	l    *launcher
	stop func() bool
}

// wait reads how the command ended.
func (p *launched) wait() (Status, error) {
	defer pool.release(p.l)
	defer p.conn.Close()
	defer p.stop()
	kind, body, err := readMsg(p.conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		pool.drop(p.l)
	}
	if err != nil {
		return Status{}, errLauncherGone
	}
	if kind != 'x' {
		return Status{}, fmt.Errorf("wait: %s", body)
	}
	f := strings.Fields(string(body))
	if len(f) != 3 {
		return Status{}, fmt.Errorf("wait: the launcher answered %q", body)
	}
	n := make([]int64, 3)
	for i := range f {
		if n[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return Status{}, fmt.Errorf("wait: the launcher answered %q", body)
		}
	}
	ws := syscall.WaitStatus(n[0])
	st := Status{Code: -1, CPU: time.Duration(n[1]+n[2]) * time.Microsecond}
	switch {
	case ws.Exited():
		st.Code = ws.ExitStatus()
	case ws.Signaled():
		st.Signal = ws.Signal()
	}
	return st, nil
}

// socketPair returns the two ends of a Unix socket pair of typ: mine as a
// connection, theirs to hand on.
func socketPair(typ int) (mine *net.UnixConn, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, typ|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	f := os.NewFile(uintptr(fds[0]), "launcher")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, err
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "launcher"), nil
}

// writeMsg and readMsg speak the launcher's framing: a 4-byte
// little-endian length, then a body whose first byte is its kind.
func writeMsg(w io.Writer, kind byte, body []byte) error {
	b := make([]byte, 5, 5+len(body))
	binary.LittleEndian.PutUint32(b, uint32(1+len(body)))
	b[4] = kind
	_, err := w.Write(append(b, body...))
	return err
}

func readMsg(r io.Reader) (kind byte, body []byte, err error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[:])
	if n == 0 || n > 1<<16 {
		return 0, nil, errors.New("bad message length")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return b[0], b[1:], nil
}

// limitedWriter keeps the first n bytes written to w and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
