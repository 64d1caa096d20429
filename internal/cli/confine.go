package cli

import (
	"fmt"
	"runtime"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
)

// envSandbox set to "off" makes meka find no confinement backend, as in a
// container with neither Landlock nor user namespaces (sandbox.Unavailable).
const envSandbox = "MEKA_SANDBOX"

// applySandboxEnv reads MEKA_SANDBOX before anything probes.
func (g *globals) applySandboxEnv() error {
	switch v := g.getenv(envSandbox); v {
	case "":
	case "off":
		sandbox.Unavailable(envSandbox + "=off")
	default:
		return usageError("%s=%q: the only value is off (no confinement backend, as in a container without Landlock or user namespaces)", envSandbox, v)
	}
	return nil
}

// confinedMode is the sandbox mode a level's commands run in, and whether
// they are confined at all (none runs no command; unrestricted none
// confined).
func confinedMode(l permission.Level) (sandbox.Mode, bool) {
	switch l {
	case permission.Read:
		return sandbox.ReadOnly, true
	case permission.Workspace:
		return sandbox.Workspace, true
	}
	return sandbox.Unrestricted, false
}

// goos is the operating system the start-up refusal is decided for.
func (g *globals) goosName() string {
	if g.goos != "" {
		return g.goos
	}
	return runtime.GOOS
}

// refuseUnconfinable refuses a front door's start at a confined level on
// an operating system with no backend at all (sandbox.RefuseOn).
func (g *globals) refuseUnconfinable(l permission.Level) error {
	mode, confined := confinedMode(l)
	if !confined {
		return nil
	}
	if err := sandbox.RefuseOn(g.goosName(), mode); err != nil {
		return usageError("%v", err)
	}
	return nil
}

// confinementGap says, for a session at level l, which guarantees no
// backend here can give and what to do, or "" when its commands can run
// confined (or it runs none, or none confined). network is [permissions]
// network. It runs the probes, so it is for after the handshake.
func confinementGap(l permission.Level, network bool) string {
	mode, confined := confinedMode(l)
	if !confined {
		return ""
	}
	_, err := sandbox.AvailableNetwork(mode, network)
	if err == nil {
		return ""
	}
	return fmt.Sprintf("Commands cannot run confined here, so the %s level refuses every shell command (nothing runs unconfined in its place). %v. "+
		"To run commands: give meka Landlock and user namespaces (in Docker, --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or a runtime such as gVisor or a VM), "+
		"or choose the unrestricted level where the container itself is the boundary you rely on.", l, err)
}
