package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nsKind is which namespaces the Landlock helper is started in.
type nsKind int

const (
	nsNone  nsKind = iota
	nsAll          // user (unless root), mount, PID, IPC and network
	nsNoNet        // the same, sharing meka's network
)

// setGroup puts cmd in a process group of its own whose whole membership a
// cancel kills, makes it die when meka dies, and for the Landlock helper
// starts it in new namespaces: in a PID namespace the helper (then the
// command) is process 1, whose death kills everything it started.
func setGroup(cmd *exec.Cmd, waitDelay time.Duration, ns nsKind) {
	cmd.SysProcAttr = sysProcAttr(ns)
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
}

func sysProcAttr(ns nsKind) *syscall.SysProcAttr {
	// Pdeathsig reaches the group leader when the thread that started it
	// ends, which in a Go program is when meka ends.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if ns == nsNone {
		return attr
	}
	attr.Cloneflags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	if ns == nsAll {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if uid, gid := os.Geteuid(), os.Getegid(); uid != 0 {
		// Unprivileged, the mount namespace needs a user namespace; the
		// command keeps its own ids in it, so files keep their owners.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// Capabilities in the user namespace end at execve for a
		// non-root uid; the helper needs these two for its mounts and
		// the loopback, and clears them before executing the command.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	}
	return attr
}

// probeNamespaces starts true in the namespaces the helper needs.
func probeNamespaces() error {
	path, err := lookPath("true", "", "/")
	if err != nil {
		return fmt.Errorf("probe namespaces: %w", err)
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = sysProcAttr(nsAll)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("probe namespaces: %w", err)
	}
	return nil
}

func killGroup(pgid int) error {
	err := unix.Kill(-pgid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		return os.ErrProcessDone
	}
	if err != nil {
		return fmt.Errorf("kill process group %d: %w", pgid, err)
	}
	return nil
}

// outsideSockets lists the Unix sockets bound in meka's network namespace
// that lie outside writable: a network namespace does not reach sockets
// in the file system, so the confined command sees /dev/null over each.
func outsideSockets(writable []string) []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		p := fields[7]
		if !strings.HasPrefix(p, "/") || seen[p] || under(p, writable) {
			continue // abstract (a network namespace closes them), or inside
		}
		seen[p] = true
		if fi, err := os.Lstat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			out = append(out, p)
		}
	}
	return out
}

// mountConfined builds the helper's view of the tree in its new mount
// namespace: the whole tree read-only (so no mode, time, xattr or owner
// changes outside), the writable paths read-write without devices, the
// protected ones read-only again over them, outside sockets masked, a
// /proc of the new PID namespace and a private /dev/shm.
func mountConfined(hs helperSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, w := range hs.Writable {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
	}
	for _, p := range hs.Protected {
		if err := unix.Mount(p, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s: %w", p, err)
		}
	}
	for _, w := range writableUnder(hs.Writable, hs.Protected) {
		if err := unix.Mount(w, w, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", w, err)
		}
	}
	for _, s := range hs.Sockets {
		// A socket gone since it was listed needs no mask.
		if err := unix.Mount("/dev/null", s, "", unix.MS_BIND, ""); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("mask socket %s: %w", s, err)
		}
	}
	if err := setattr("/", unix.AT_RECURSIVE, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
		return fmt.Errorf("bind the tree read-only: %w", err)
	}
	for _, w := range hs.Writable {
		err := setattr(w, unix.AT_RECURSIVE, unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, unix.MOUNT_ATTR_RDONLY)
		if errors.Is(err, unix.EPERM) { // a mount below is read-only for good
			err = setattr(w, 0, unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOSUID, unix.MOUNT_ATTR_RDONLY)
		}
		if err != nil {
			return fmt.Errorf("make %s writable: %w", w, err)
		}
	}
	for _, p := range hs.Protected {
		if err := setattr(p, 0, unix.MOUNT_ATTR_RDONLY, 0); err != nil {
			return fmt.Errorf("make %s read-only: %w", p, err)
		}
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err)
		}
	}
	return nil
}

func setattr(path string, flags int, set, clr uint64) error {
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: set, Attr_clr: clr})
}

// loopbackUp brings lo up in the new network namespace, so a command can
// still serve and reach itself on 127.0.0.1 (a test's server).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	return nil
}

// keptCaps are the capabilities a confined root command keeps (the
// bounding set meka's helper leaves): those that act on files it may
// write, none that reach past the sandbox (module loading, raw I/O,
// reboot, clock, namespaces).
var keptCaps = map[int]bool{
	unix.CAP_CHOWN: true, unix.CAP_DAC_OVERRIDE: true, unix.CAP_DAC_READ_SEARCH: true,
	unix.CAP_FOWNER: true, unix.CAP_FSETID: true, unix.CAP_KILL: true,
	unix.CAP_SETGID: true, unix.CAP_SETUID: true,
}

// clearAmbient drops the capabilities the helper was started with in its
// user namespace, so the command it executes has none.
func clearAmbient() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}

// dropCaps shrinks the bounding set, so the program root executes next
// starts with only keptCaps.
func dropCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if keptCaps[c] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return nil
}

// processAlive reports whether pid runs; a process of another user that
// refuses the probe counts as running.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
