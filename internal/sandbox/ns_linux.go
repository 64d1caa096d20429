package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/sandbox/helper"
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
	if os.Geteuid() != 0 {
		// Unprivileged, the mount namespace needs a user namespace. The
		// helper maps its ids there itself (helper.Spec.MapIDs): meka is
		// not dumpable, so its child's /proc files are root's until the
		// execve, and meka could not write the maps.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		// Capabilities in the user namespace end at execve for a
		// non-root uid; the helper needs these two for its maps, mounts
		// and the loopback, and clears them before executing the command.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN}
	}
	return attr
}

// kernelID is the kernel's release and build, as uname -rv says them.
func kernelID() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:]), nil
}

// probeNamespaces runs the helper as a command would, mounts and all,
// with true as the command: the namespaces must be there, and the
// helper, started by an undumpable meka, must be able to map its ids.
func probeNamespaces() error {
	path, err := lookPath("true", "", "/")
	if err != nil {
		return fmt.Errorf("probe namespaces: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("probe namespaces: %w", err)
	}
	hs := helper.Spec{Path: path, Mount: true, Landlock: true}
	if uid := os.Geteuid(); uid != 0 {
		hs.MapIDs, hs.UID, hs.GID = true, uid, os.Getegid()
	}
	cmd := exec.Command(exe, hs.Args([]string{"true"})...)
	cmd.Dir, cmd.Env = "/", []string{}
	cmd.SysProcAttr = sysProcAttr(nsAll)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("probe namespaces: %w: %s", err, strings.TrimSpace(string(out)))
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

// processAlive reports whether pid runs; a process of another user that
// refuses the probe counts as running.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
