package helper

import (
	"runtime"
	"syscall"
	"unsafe"
)

// ServeFD is the descriptor a serving helper receives its commands on: a
// SOCK_SEQPACKET socket whose every message carries, as SCM_RIGHTS, the
// descriptors of one command: its connection (a stream socket), then its
// stdin, stdout and stderr.
const ServeFD = 3

// The messages on a command's connection, each a 4-byte little-endian
// length and a body whose first byte is its kind.
const (
	// msgRequest, from meka: the command, as NUL-ended fields of a
	// letter, '=', and a value: p (program), d (directory), t (its temp
	// dir, writable), a (each argument), e (each environment entry), r
	// (each path kept read-only), s (each outside socket to mask), h
	// (each path masked) and v (each path shown through a mask).
	msgRequest = 'q'
	// msgStarted, from the helper: the command runs.
	msgStarted = 's'
	// msgFailed, from the helper: the command could not start; the text
	// says why.
	msgFailed = 'f'
	// msgExited, from the helper: the command ended; decimal wait status,
	// user and system microseconds follow, space-separated.
	msgExited = 'x'
)

// maxRequest bounds a request: the kernel's own bound on a command line
// and environment together is lower.
const maxRequest = 16 << 20

// serve is the helper as a launcher: confined once (mounts, loopback) and
// then starting each command meka sends, each in a PID namespace of its
// own (so it signals and sees as running nothing but its own tree, and
// its death ends everything it started), in a mount namespace of its own
// (see threadMounts) and, with Landlock, in a Landlock domain of its own
// that lets it write its roots and its own temp dir. It returns when meka closes its end, which also ends every
// command still running: the helper is process 1 of its PID namespace.
//
// The helper keeps CAP_SYS_ADMIN in its namespaces (a PID namespace per
// command needs it); each command's thread gives up every capability a
// command must not have before starting it, and the helper makes itself
// undumpable so no command can trace it or read its memory.
func serve(s Spec) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, ServeFD, syscall.F_SETFD, syscall.FD_CLOEXEC); e != 0 {
		return wrap("read commands", e)
	}
	if err := prctl(prSetDumpable, 0, 0); err != nil {
		return wrap("make the launcher undumpable", err)
	}
	if _, err := syscall.Write(ServeFD, []byte{'r'}); err != nil {
		return wrap("report ready", err)
	}
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := syscall.Recvmsg(ServeFD, buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return wrap("read commands", err)
		}
		if n == 0 && oobn == 0 {
			syscall.Exit(0) // meka closed its end
		}
		fds := rights(oob[:oobn])
		if len(fds) != 4 {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			continue
		}
		go runOne(s, fds[0], [3]int{fds[1], fds[2], fds[3]})
	}
}

// rights returns the descriptors an SCM_RIGHTS message carried.
func rights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

// runOne starts one command on a thread of its own and reports its end.
// The thread is confined for the command (mount namespace, capabilities,
// no_new_privs, Landlock), so it is never given back: the goroutine ends
// locked to it, and the runtime ends the thread with it.
func runOne(s Spec, conn int, stdio [3]int) {
	runtime.LockOSThread()
	defer syscall.Close(conn)
	pid, pidfd, err := start(s, conn, stdio)
	for _, fd := range stdio {
		syscall.Close(fd)
	}
	if err != nil {
		sendMsg(conn, msgFailed, err.Error())
		return
	}
	defer syscall.Close(pidfd)
	sendMsg(conn, msgStarted, "")

	// meka closing the connection (a cancel, or meka's death) kills the
	// command; the pidfd names this command and no later one.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		var b [64]byte
		for {
			n, err := syscall.Read(conn, b[:])
			if err == syscall.EINTR {
				continue
			}
			if n <= 0 {
				break
			}
		}
		syscall.Syscall6(sysPidfdSendSignal, uintptr(pidfd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	}()
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err = syscall.Wait4(pid, &ws, 0, &ru)
		if err != syscall.EINTR {
			break
		}
	}
	syscall.Shutdown(conn, syscall.SHUT_RD) // ends the watcher's read
	<-watched
	if err != nil {
		sendMsg(conn, msgFailed, "wait: "+err.Error())
		return
	}
	sendMsg(conn, msgExited, itoa(int(ws))+" "+itoa(int(ru.Utime.Sec*1e6+ru.Utime.Usec))+" "+itoa(int(ru.Stime.Sec*1e6+ru.Stime.Usec)))
}

const sysPidfdSendSignal = 424 // the same on every architecture (since 5.1)

// start reads the command's request and starts it from this thread,
// confined first.
func start(s Spec, conn int, stdio [3]int) (pid, pidfd int, err error) {
	body, err := readMsg(conn, msgRequest)
	if err != nil {
		return 0, 0, wrap("read request", err)
	}
	var path, dir, temp string
	var args, env, protected, sockets, masked, visible []string
	for len(body) > 0 {
		i := 0
		for i < len(body) && body[i] != 0 {
			i++
		}
		if i == len(body) || i < 2 || body[1] != '=' {
			return 0, 0, errorString("malformed request")
		}
		val := string(body[2:i])
		switch body[0] {
		case 'p':
			path = val
		case 'd':
			dir = val
		case 't':
			temp = val
		case 'a':
			args = append(args, val)
		case 'e':
			env = append(env, val)
		case 'r':
			protected = append(protected, val)
		case 's':
			sockets = append(sockets, val)
		case 'h':
			masked = append(masked, val)
		case 'v':
			visible = append(visible, val)
		default:
			return 0, 0, errorString("malformed request")
		}
		body = body[i+1:]
	}
	if path == "" || len(args) == 0 {
		return 0, 0, errorString("no command")
	}
	if err := threadMounts(s, temp, protected, sockets, masked, visible); err != nil {
		return 0, 0, err
	}
	if err := confineThread(s, temp); err != nil {
		return 0, 0, err
	}
	pidfd = -1
	attr := &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: []uintptr{uintptr(stdio[0]), uintptr(stdio[1]), uintptr(stdio[2])},
		Sys: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWPID,
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
			PidFD:      &pidfd,
		},
	}
	pid, err = syscall.ForkExec(path, args, attr)
	if err != nil {
		return 0, 0, wrap("execute "+path, err)
	}
	if pidfd < 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Wait4(pid, nil, 0, nil)
		return 0, 0, errorString("the kernel gave no pidfd")
	}
	return pid, pidfd, nil
}

// threadMounts gives this thread, and so the command it starts, a mount
// namespace of its own, made from the launcher's: of the temp root only
// temp stays writable, so the command cannot change the temp dirs of the
// others running beside it (their modes and times included, and on any
// backend); and protected and sockets, listed for this command, are bound
// read-only and masked afresh, over whatever has replaced what the
// launcher's own mounts hold since it started (a .git made again, an
// agent's socket); and masked are hidden, visible shown through them
// (see mask): the launcher's own mounts hide nothing, so one launcher
// serves every session, each command seeing only its own scratchpad.
// Mounts must precede Landlock, which forbids them.
func threadMounts(s Spec, temp string, protected, sockets, masked, visible []string) error {
	root := s.TempRoot
	if temp == "" && len(protected) == 0 && len(sockets) == 0 && len(masked) == 0 {
		return nil
	}
	if temp != "" && (root == "" || temp == root || !within(temp, root)) {
		return errorString("temp dir " + temp + " is not in the launcher's " + root)
	}
	// Per thread: CLONE_NEWNS brings CLONE_FS, which a thread may
	// unshare alone.
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return wrap("unshare the mount namespace", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return wrap("make mounts private", err)
	}
	if temp != "" {
		// The root bound over itself is a mount of this namespace's
		// own, whichever writable path's mount it lay in.
		for _, p := range []string{root, temp} {
			if err := syscall.Mount(p, p, "", syscall.MS_BIND, ""); err != nil {
				return wrap("bind "+p, err)
			}
		}
		if err := setattr(temp, 0, mountAttrNodev|mountAttrNosuid, mountAttrRdonly); err != nil {
			return wrap("make "+temp+" writable", err)
		}
		if err := setattr(root, 0, mountAttrRdonly, 0); err != nil {
			return wrap("make "+root+" read-only", err)
		}
	}
	for _, p := range protected {
		err := syscall.Mount(p, p, "", syscall.MS_BIND, "")
		if err == syscall.ENOENT {
			continue // gone since meka listed it: nothing to write
		}
		if err == nil {
			err = setattr(p, 0, mountAttrRdonly, 0)
		}
		if err != nil {
			return wrap("make "+p+" read-only", err)
		}
	}
	writable := s.Writable
	if temp != "" {
		writable = append(writable[:len(writable):len(writable)], temp)
	}
	for _, w := range WritableUnder(writable, protected) {
		if err := syscall.Mount(w, w, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return wrap("bind "+w, err)
		}
		if err := setattr(w, 0, mountAttrNodev|mountAttrNosuid, mountAttrRdonly); err != nil {
			return wrap("make "+w+" writable", err)
		}
	}
	for _, k := range sockets {
		if err := syscall.Mount("/dev/null", k, "", syscall.MS_BIND, ""); err != nil && err != syscall.ENOENT {
			return wrap("mask socket "+k, err)
		}
	}
	return mask(masked, visible, writable)
}

// confineThread gives this thread, and so the command it starts, only
// what a command may have: no_new_privs, the capabilities a confined
// command keeps (root) or none (any other uid), and with Landlock a
// domain writing only the roots and temp.
func confineThread(s Spec, temp string) error {
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return wrap("set no_new_privs", err)
	}
	// An execve keeps the inheritable and ambient sets (bubblewrap fills
	// both with what it was told to add) whatever the bounding set says.
	keep := uint64(0)
	if syscall.Geteuid() == 0 {
		keep = keptCaps
		if err := dropCaps(); err != nil {
			return wrap("drop capabilities", err)
		}
	}
	if err := prctl(prCapAmbient, prCapAmbientClearAll, 0); err != nil {
		return wrap("drop ambient capabilities", err)
	}
	if err := keepInheritable(keep); err != nil {
		return wrap("drop inheritable capabilities", err)
	}
	if !s.Landlock {
		return nil
	}
	writable := s.Writable
	if temp != "" {
		writable = append(writable[:len(writable):len(writable)], temp)
	}
	if err := restrict(writable, s.Network); err != nil {
		return wrap("restrict: landlock", err)
	}
	return nil
}

func sendMsg(fd int, kind byte, text string) {
	b := make([]byte, 5+len(text))
	n := uint32(1 + len(text))
	b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	b[4] = kind
	copy(b[5:], text)
	for len(b) > 0 {
		w, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return // meka is gone: nobody to tell
		}
		b = b[w:]
	}
}

// readMsg reads one message of kind from fd and returns its body.
func readMsg(fd int, kind byte) ([]byte, error) {
	var h [4]byte
	if err := readFull(fd, h[:]); err != nil {
		return nil, err
	}
	n := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16 | uint32(h[3])<<24
	if n == 0 || n > maxRequest {
		return nil, errorString("bad message length")
	}
	b := make([]byte, n)
	if err := readFull(fd, b); err != nil {
		return nil, err
	}
	if b[0] != kind {
		return nil, errorString("unexpected message")
	}
	return b[1:], nil
}

func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Read(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errorString("connection closed")
		}
		b = b[n:]
	}
	return nil
}

// keepInheritable shrinks this thread's inheritable set to keep.
func keepInheritable(keep uint64) error {
	const capV3 = 0x20080522
	hdr := struct {
		version uint32
		pid     int32 // 0: this thread
	}{version: capV3}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	data[0].inheritable &= uint32(keep)
	data[1].inheritable &= uint32(keep >> 32)
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return e
	}
	return nil
}
