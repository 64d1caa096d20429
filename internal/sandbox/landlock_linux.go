package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RunHelperIfRequested must be the first thing main (and TestMain, in
// packages whose tests run confined commands) does. When the process was
// started by Command as the Landlock helper, it confines itself and
// executes the command, never returning; otherwise it returns at once.
func RunHelperIfRequested() {
	if len(os.Args) < 4 || os.Args[1] != helperMarker {
		return
	}
	err := runHelper(os.Args[2], os.Args[3:])
	fmt.Fprintf(os.Stderr, "meka sandbox: %v\n", err)
	os.Exit(126)
}

// runHelper confines this thread and executes the command from it. A
// Landlock domain binds the thread that restricts itself; execve keeps
// only the calling thread, so the command starts wholly confined without
// having to restrict the runtime's other threads.
func runHelper(specJSON string, args []string) error {
	runtime.LockOSThread()
	var hs helperSpec
	if err := json.Unmarshal([]byte(specJSON), &hs); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	if err := restrictThread(hs.Writable); err != nil {
		return err
	}
	if err := syscall.Exec(hs.Path, args, os.Environ()); err != nil {
		return fmt.Errorf("execute %s: %w", hs.Path, err)
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, 0 without one.
func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// writeAccess is every write right the ABI knows. Reads, execution and
// device ioctls are left unhandled, so allowed everywhere: the confinement
// is a write boundary, as the permission levels define it.
func writeAccess(abi int) uint64 {
	a := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		a |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		a |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return a
}

// fileAccess are the rights a rule on a file (not a directory) may grant.
const fileAccess = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE

// devWritable are the devices every shell expects to write.
var devWritable = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// restrictThread confines the calling thread (and what it executes) to
// write only beneath writable and to the common devices.
func restrictThread(writable []string) error {
	abi := landlockABI()
	if abi < 1 {
		return fmt.Errorf("restrict: landlock: %w", ErrNoConfinement)
	}
	handled := writeAccess(abi)
	// The ABI v1 layout: later fields (network, scopes) stay unhandled.
	attr := struct{ handledFS uint64 }{handled}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return fmt.Errorf("restrict: create ruleset: %w", e)
	}
	ruleset := int(r)
	defer unix.Close(ruleset)
	for _, p := range writable {
		if err := addRule(ruleset, p, handled, false); err != nil {
			return err
		}
	}
	for _, p := range devWritable {
		if err := addRule(ruleset, p, handled&fileAccess, true); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("restrict: no_new_privs: %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return fmt.Errorf("restrict: restrict self: %w", e)
	}
	return nil
}

// addRule allows access beneath path (or to it, for a file). A missing
// path is skipped: there is nothing to allow.
func addRule(ruleset int, path string, access uint64, optional bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || optional {
			return nil
		}
		return fmt.Errorf("restrict: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("restrict: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileAccess
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
		if optional {
			return nil
		}
		return fmt.Errorf("restrict: allow %s: %w", path, e)
	}
	return nil
}
