package helper

import (
	"syscall"
	"unsafe"
)

func init() {
	args := ownArgs()
	if len(args) < 2 || args[1] != Marker {
		return
	}
	err := run(args[2:])
	msg := "meka sandbox: " + err.Error() + "\n"
	syscall.Write(2, []byte(msg))
	syscall.Exit(126)
}

// ownArgs reads this process's arguments from /proc/self/cmdline: the os
// package, which holds them, is not initialised yet. It returns nil for a
// process that is not the helper, having read only the first bytes.
func ownArgs() []string {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if !helperPrefix(buf) {
			return nil
		}
	}
	var args []string
	start := 0
	for i, c := range buf {
		if c == 0 {
			args = append(args, string(buf[start:i]))
			start = i + 1
		}
	}
	return args
}

// helperPrefix reports whether b, the start of the argument block, may
// still be a helper's: its second argument is Marker.
func helperPrefix(b []byte) bool {
	i := 0
	for i < len(b) && b[i] != 0 {
		i++
	}
	if i == len(b) {
		return true // the first argument has not ended yet
	}
	rest := b[i+1:]
	m := Marker + "\x00"
	if len(rest) < len(m) {
		return string(rest) == m[:len(rest)]
	}
	return string(rest[:len(m)]) == m
}

// run confines this process and executes the command, or, as a launcher
// (Serve), serves commands. In namespaces of its own (Mount) it first maps
// its ids, binds the tree read-only and brings the loopback up; a
// one-shot helper then drops the capabilities that could undo that, and
// Landlock confines writes, signals and abstract sockets. Every step
// acts on this thread (capabilities, no_new_privs and Landlock are
// per-thread), which then executes the command.
//
// All init functions run on the startup thread, locked to it (see
// runtime.LockOSThread), so this one needs no lock of its own; taking
// one would start the runtime's template thread for nothing.
func run(a []string) error {
	s, args, err := parse(a)
	if err != nil {
		return errorString("read spec: " + err.Error())
	}
	if err := setUp(s); err != nil {
		if s.Serve {
			syscall.Write(ServeFD, []byte("e"+err.Error()))
		}
		return err
	}
	if s.Serve {
		return serve(s)
	}
	if s.Mount {
		if syscall.Geteuid() == 0 {
			err = dropCaps()
		} else {
			err = prctl(prCapAmbient, prCapAmbientClearAll, 0)
		}
		if err != nil {
			return wrap("drop capabilities", err)
		}
	}
	if s.Landlock {
		if err := restrict(s.Writable, s.Network); err != nil {
			return wrap("restrict: landlock", err)
		}
	}
	err = syscall.Exec(s.Path, args, syscall.Environ())
	return wrap("execute "+s.Path, err)
}

// setUp maps the ids and, in namespaces of the helper's own, builds its
// view of the tree and its loopback.
func setUp(s Spec) error {
	if s.MapIDs {
		if err := mapIDs(s.UID, s.GID); err != nil {
			return err
		}
	}
	if !s.Mount {
		return nil
	}
	wd, err := syscall.Getwd()
	if err != nil {
		return wrap("read working directory", err)
	}
	if err := mountConfined(s); err != nil {
		return err
	}
	// The working directory still names the mount under the new binds
	// (read-only now); entering it again finds the top one.
	if err := syscall.Chdir(wd); err != nil {
		return wrap("enter "+wd, err)
	}
	if !s.Network {
		if err := loopbackUp(); err != nil {
			return wrap("bring lo up", err)
		}
	}
	return nil
}

func wrap(what string, err error) error { return errorString(what + ": " + err.Error()) }

// mapIDs maps uid and gid to themselves in the user namespace this
// process was started in. The process can: once dumpable its /proc files
// are its own (meka, which started it, is not dumpable, so meka cannot
// write them), and it has CAP_SYS_ADMIN in the namespace, whose creator
// had its uid. An execve leaves it dumpable unless its binary is not
// readable; it holds nothing of meka's (a fresh process, the command's
// environment), so it makes itself dumpable in that case too.
func mapIDs(uid, gid int) error {
	if err := prctl(prSetDumpable, 1, 0); err != nil {
		return wrap("make the helper dumpable", err)
	}
	for _, w := range [][2]string{
		{"/proc/self/uid_map", itoa(uid) + " " + itoa(uid) + " 1\n"},
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/gid_map", itoa(gid) + " " + itoa(gid) + " 1\n"},
	} {
		if err := writeFile(w[0], w[1]); err != nil {
			return wrap("write "+w[0], err)
		}
	}
	return nil
}

func writeFile(path, data string) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = syscall.Write(fd, []byte(data))
	return err
}

// Mount attributes and the syscall that sets them: mount_setattr has the
// same number on every architecture Go supports (new syscalls share one
// table since 5.1).
const (
	sysMountSetattr = 442
	atRecursive     = 0x8000
	mountAttrRdonly = 0x1
	mountAttrNosuid = 0x2
	mountAttrNodev  = 0x4
)

type mountAttr struct {
	set, clr, propagation, usernsFD uint64
}

func setattr(path string, flags uintptr, set, clr uint64) error {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	attr := mountAttr{set: set, clr: clr}
	_, _, e := syscall.Syscall6(sysMountSetattr, uintptr(0xffffff9c) /* AT_FDCWD */, uintptr(unsafe.Pointer(p)),
		flags, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return e
	}
	return nil
}

// mountConfined builds the helper's view of the tree in its new mount
// namespace: the whole tree read-only (so no mode, time, xattr or owner
// changes outside), the writable paths read-write without devices, the
// protected ones read-only again over them, outside sockets masked, a
// /proc of the new PID namespace and a private /dev/shm.
func mountConfined(s Spec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return wrap("make mounts private", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return wrap("mount /proc", err)
	}
	writable := s.Writable
	if s.TempRoot != "" {
		writable = append(writable[:len(writable):len(writable)], s.TempRoot)
	}
	for _, w := range writable {
		if err := syscall.Mount(w, w, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return wrap("bind "+w, err)
		}
	}
	for _, p := range s.Protected {
		if err := syscall.Mount(p, p, "", syscall.MS_BIND, ""); err != nil {
			return wrap("bind "+p, err)
		}
	}
	under := WritableUnder(writable, s.Protected)
	for _, w := range under {
		if err := syscall.Mount(w, w, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return wrap("bind "+w, err)
		}
	}
	for _, k := range s.Sockets {
		// A socket gone since it was listed needs no mask.
		if err := syscall.Mount("/dev/null", k, "", syscall.MS_BIND, ""); err != nil && err != syscall.ENOENT {
			return wrap("mask socket "+k, err)
		}
	}
	if err := setattr("/", atRecursive, mountAttrRdonly, 0); err != nil {
		return wrap("bind the tree read-only", err)
	}
	for _, w := range writable {
		err := setattr(w, atRecursive, mountAttrNodev|mountAttrNosuid, mountAttrRdonly)
		if err == syscall.EPERM { // a mount below is read-only for good
			err = setattr(w, 0, mountAttrNodev|mountAttrNosuid, mountAttrRdonly)
		}
		if err != nil {
			return wrap("make "+w+" writable", err)
		}
	}
	for _, p := range s.Protected {
		if err := setattr(p, 0, mountAttrRdonly, 0); err != nil {
			return wrap("make "+p+" read-only", err)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/dev/shm", &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if err := syscall.Mount("tmpfs", "/dev/shm", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
			return wrap("mount /dev/shm", err)
		}
	}
	// Last: each writable path is final, so a mask inside one (a data
	// directory in the workspace) stays read-only.
	return mask(s.Masked, s.Visible, writable)
}

// The new mount API (the same numbers on every architecture since 5.2).
const (
	sysOpenTree         = 428
	sysMoveMount        = 429
	openTreeClone       = 0x1
	openTreeCloexec     = syscall.O_CLOEXEC
	moveMountFEmptyPath = 0x4
)

// mask hides each of masked from the command, read and write: an empty
// read-only tmpfs over a directory, /dev/null bound read-only over a
// file. Of what lies inside one, visible (the session's scratchpad) shows
// through read-only and writable (a temp dir in the data directory)
// read-write: each is cloned, with the mounts below it, before the tmpfs
// hides it, and the clone moved onto a directory made for it there. A
// path that is missing needs nothing.
func mask(masked, visible, writable []string) error {
	for _, m := range masked {
		var st syscall.Stat_t
		if err := syscall.Stat(m, &st); err == syscall.ENOENT {
			continue
		} else if err != nil {
			return wrap("mask "+m, err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			if err := syscall.Mount("/dev/null", m, "", syscall.MS_BIND, ""); err != nil {
				return wrap("mask "+m, err)
			}
			if err := setattr(m, 0, mountAttrRdonly, 0); err != nil {
				return wrap("mask "+m, err)
			}
			continue
		}
		if err := maskDir(m, visible, writable); err != nil {
			return wrap("mask "+m, err)
		}
	}
	return nil
}

// through is a path shown through a mask: a detached clone of its mount
// tree, and whether it stays writable.
type through struct {
	path     string
	fd       int
	writable bool
	dir      bool
}

func maskDir(m string, visible, writable []string) error {
	var keep []through
	defer func() {
		for _, k := range keep {
			syscall.Close(k.fd)
		}
	}()
	for i, ps := range [][]string{visible, writable} {
		for _, p := range ps {
			if p == m || !within(p, m) {
				continue
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err == syscall.ENOENT {
				continue
			} else if err != nil {
				return err
			}
			fd, err := openTree(p)
			if err != nil {
				return wrap("clone "+p, err)
			}
			keep = append(keep, through{path: p, fd: fd, writable: i == 1, dir: st.Mode&syscall.S_IFMT == syscall.S_IFDIR})
		}
	}
	if err := syscall.Mount("tmpfs", m, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0755"); err != nil {
		return err
	}
	for _, k := range keep {
		if err := makeUnder(m, k.path, k.dir); err != nil {
			return wrap("make "+k.path, err)
		}
		if err := moveMount(k.fd, k.path); err != nil {
			return wrap("bind "+k.path, err)
		}
		var err error
		if k.writable {
			err = setattr(k.path, 0, mountAttrNodev|mountAttrNosuid, mountAttrRdonly)
		} else {
			err = setattr(k.path, atRecursive, mountAttrRdonly, 0)
		}
		if err != nil {
			return wrap("bind "+k.path, err)
		}
	}
	return setattr(m, 0, mountAttrRdonly, 0)
}

// makeUnder makes path, inside the fresh tmpfs at base, with the
// directories above it: a directory, or an empty file to bind one over.
func makeUnder(base, path string, dir bool) error {
	for i := len(base) + 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		if i == len(path) && !dir {
			fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
			if err != nil {
				return err
			}
			syscall.Close(fd)
			return nil
		}
		if err := syscall.Mkdir(p, 0o755); err != nil && err != syscall.EEXIST {
			return err
		}
	}
	return nil
}

// openTree returns a detached clone of the mount tree at path.
func openTree(path string) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, e := syscall.Syscall(sysOpenTree, uintptr(0xffffff9c) /* AT_FDCWD */, uintptr(unsafe.Pointer(p)),
		openTreeClone|openTreeCloexec|atRecursive)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// moveMount attaches the detached tree fd at path.
func moveMount(fd int, path string) error {
	empty, _ := syscall.BytePtrFromString("")
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return err
	}
	_, _, e := syscall.Syscall6(sysMoveMount, uintptr(fd), uintptr(unsafe.Pointer(empty)),
		uintptr(0xffffff9c) /* AT_FDCWD */, uintptr(unsafe.Pointer(p)), moveMountFEmptyPath, 0)
	if e != 0 {
		return e
	}
	return nil
}

// loopbackUp brings lo up in the new network namespace, so a command can
// still serve and reach itself on 127.0.0.1 (a test's server).
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte // the rest of the union
	}
	copy(ifr.name[:], "lo")
	if err := ioctl(fd, syscall.SIOCGIFFLAGS, unsafe.Pointer(&ifr)); err != nil {
		return err
	}
	ifr.flags |= syscall.IFF_UP
	return ioctl(fd, syscall.SIOCSIFFLAGS, unsafe.Pointer(&ifr))
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

const (
	prSetDumpable        = 4
	prCapbsetDrop        = 24
	prSetNoNewPrivs      = 38
	prCapAmbient         = 47
	prCapAmbientClearAll = 4
)

func prctl(op, a, b uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, op, a, b, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

// keptCaps are the capabilities a confined root command keeps (the
// bounding set the helper leaves): those that act on files it may write,
// none that reach past the sandbox (module loading, raw I/O, reboot,
// clock, namespaces): chown, dac_override, dac_read_search, fowner,
// fsetid, kill, setgid, setuid.
const keptCaps = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7

// dropCaps shrinks the bounding set, so the program root executes next
// starts with only keptCaps. The kernel's last capability is where the
// drop first fails with EINVAL.
func dropCaps() error {
	for c := uintptr(0); c < 64; c++ {
		if keptCaps&(1<<c) != 0 {
			continue
		}
		if err := prctl(prCapbsetDrop, c, 0); err == syscall.EINVAL {
			return nil
		} else if err != nil {
			return wrap("drop capability "+itoa(int(c)), err)
		}
	}
	return nil
}
