package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// runHelper confines this process and executes the command. In
// namespaces of its own (Mount) it first binds the tree read-only, brings
// the loopback up and, as root, drops the capabilities that could undo
// that; then Landlock confines writes, TCP, signals and abstract sockets.
func runHelper(specJSON string, args []string) error {
	runtime.LockOSThread()
	var hs helperSpec
	if err := json.Unmarshal([]byte(specJSON), &hs); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	if hs.Mount {
		wd, err := unix.Getwd()
		if err != nil {
			return fmt.Errorf("read working directory: %w", err)
		}
		if err := mountConfined(hs); err != nil {
			return err
		}
		// The working directory still names the mount under the new binds
		// (read-only now); entering it again finds the top one.
		if err := unix.Chdir(wd); err != nil {
			return fmt.Errorf("enter %s: %w", wd, err)
		}
		if !hs.Network {
			if err := loopbackUp(); err != nil {
				return err
			}
		}
		drop := clearAmbient
		if os.Geteuid() == 0 {
			drop = dropCaps
		}
		if err := drop(); err != nil {
			return err
		}
	}
	if err := restrict(hs.Writable, hs.Network); err != nil {
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

// LandlockABI returns the kernel's Landlock ABI version, 0 without one.
func LandlockABI() int { return landlockABI() }

// devFiles and devDirs are the devices every shell expects to write.
var (
	devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}
	devDirs  = []string{"/dev/pts", "/dev/shm"}
)

// restrict confines this process (and what it executes) to write only
// beneath writable and to the common devices, reading everywhere; with
// the network closed, to no abstract socket outside (ABI 6); and always
// to signal only its own domain (ABI 6). TCP is left to the network
// namespace both backends close the network with: Landlock's TCP rules
// would also refuse a test's server on the namespace's own loopback.
// The caller has checked that the kernel offers Landlock: BestEffort only
// picks what the ABI offers, never runs unconfined.
func restrict(writable []string, network bool) error {
	if landlockABI() < 1 {
		return fmt.Errorf("restrict: landlock: %w", ErrNoConfinement)
	}
	cfg := landlock.V7
	cfg.HandledAccessNet = 0
	cfg.Scoped = ll.ScopeSignal
	if !network {
		cfg.Scoped |= ll.ScopeAbstractUnixSocket
	}
	err := cfg.BestEffort().Restrict(
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
