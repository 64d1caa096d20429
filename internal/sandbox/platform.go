package sandbox

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrUnsupportedOS means the operating system has no backend at all:
// Landlock and bubblewrap are Linux's. It matches ErrNoConfinement.
var ErrUnsupportedOS = fmt.Errorf("%w: the operating system has none", ErrNoConfinement)

// RefuseOn says why a session at mode cannot start on goos, with what to
// do, or nil where it can. Off Linux no confined command could ever run
// (and the checked file operations are Linux's too), so meka refuses a
// confined level when it starts rather than at the first command, and
// never runs one unconfined. It takes goos so that the decision is tested
// on any machine.
func RefuseOn(goos string, mode Mode) error {
	if goos == "linux" || mode == Unrestricted {
		return nil
	}
	return fmt.Errorf("%w (%s): meka confines the %s level's commands and file access with Landlock or bubblewrap, which only Linux has, "+
		"and never runs them unconfined instead. Run meka on Linux (a VM, WSL 2 on Windows, or a Linux container), "+
		"or start it with --permission unrestricted ([permissions] default = \"unrestricted\"), where nothing is confined: "+
		"only where the machine itself is the boundary", ErrUnsupportedOS, goos, mode)
}

// forced, when set, is why every backend is to be reported unavailable
// (Unavailable).
var forced atomic.Pointer[string]

// Unavailable makes this process's probes find no backend, for why, as
// on a machine (a container, typically) with neither Landlock nor user
// namespaces: confined commands are then refused with what is missing,
// and Describe and Check say so. It lets a person see what meka does
// there, and tests check it, on a machine that has both. It must be
// called before the first probe (Warm, Available, Command); a later call
// changes nothing.
func Unavailable(why string) {
	if why == "" {
		why = "switched off"
	}
	forced.CompareAndSwap(nil, &why)
}

// forcedProbe is the probe Unavailable leaves: no backend, for why.
func forcedProbe(why string) probe {
	err := errors.New(why)
	return probe{
		landlockABI: func() int { return 0 },
		bwrap:       func() (string, error) { return "", err },
		executable:  func() (string, error) { return "", err },
		namespaces:  func() error { return err },
		off:         why,
	}
}
