package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
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

// devFiles and devDirs are the devices every shell expects to write.
var (
	devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}
	devDirs  = []string{"/dev/pts"}
)

// restrictThread confines this process (and what it executes) to write
// only beneath writable and to the common devices, reading everywhere,
// through go-landlock at the best ABI the kernel offers. The caller has
// checked that the kernel offers one: BestEffort is used only to pick the
// ABI, never to run unconfined.
func restrictThread(writable []string) error {
	if landlockABI() < 1 {
		return fmt.Errorf("restrict: landlock: %w", ErrNoConfinement)
	}
	err := landlock.V7.BestEffort().RestrictPaths(
		landlock.RODirs("/"),
		landlock.RWDirs(writable...).IgnoreIfMissing(),
		landlock.RWFiles(devFiles...).IgnoreIfMissing(),
		landlock.RWDirs(devDirs...).IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("restrict: landlock: %w", err)
	}
	return nil
}
