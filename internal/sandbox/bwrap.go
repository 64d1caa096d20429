package sandbox

import (
	"os"

	"meka.dev/meka/internal/sandbox/helper"
)

// bwrapArgs confines with bubblewrap: new PID (with its own /proc) and,
// unless the network is open, network namespaces; the whole tree bound
// read-only with a private /dev; the writable paths bound read-write over
// it, the protected ones read-only again over those, and every outside
// Unix socket masked with /dev/null. inner, when given, is run between
// bwrap and the command (the Landlock helper of the combined backend).
func bwrapArgs(p bwrapPlan) []string {
	// --as-pid-1: the command is the PID namespace's process 1, as under
	// meka's own helper, so its death ends everything it started; bwrap's
	// own reaper would cost another fork for nothing.
	out := []string{"--die-with-parent", "--unshare-pid", "--as-pid-1", "--unshare-ipc"}
	if !p.network {
		out = append(out, "--unshare-net")
	}
	if p.dropCaps {
		// As root bwrap keeps every capability: keep those a root shell
		// needs for files, drop the ones that could undo the namespaces
		// (CAP_SYS_ADMIN remounts), reach the host or the kernel.
		out = append(out, "--cap-drop", "ALL")
		for _, c := range rootCaps {
			out = append(out, "--cap-add", c)
		}
	}
	if p.launcher {
		// A launcher starts each command in a PID namespace of its own
		// (CAP_SYS_ADMIN) and, as root, shrinks the bounding set of the
		// thread that starts it to rootCaps (CAP_SETPCAP): the command
		// never holds either.
		out = append(out, "--cap-add", "CAP_SYS_ADMIN")
		if p.dropCaps {
			out = append(out, "--cap-add", "CAP_SETPCAP")
		}
	}
	out = append(out, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	for _, w := range p.writable {
		out = append(out, "--bind", w, w)
	}
	for _, r := range p.protected {
		out = append(out, "--ro-bind", r, r)
	}
	for _, w := range helper.WritableUnder(p.writable, p.protected) {
		out = append(out, "--bind", w, w)
	}
	// Masks last but for sockets (none lies under one): over the
	// writable paths, so a data directory in the workspace is hidden; what
	// shows through one bound again over it before it turns read-only.
	for _, m := range p.masked {
		if fi, err := os.Stat(m); err != nil || !fi.IsDir() {
			out = append(out, "--ro-bind", "/dev/null", m)
			continue
		}
		out = append(out, "--tmpfs", m)
		for _, v := range p.visible {
			if v != m && Within(v, m) {
				out = append(out, "--ro-bind-try", v, v)
			}
		}
		for _, w := range p.writable {
			if w != m && Within(w, m) {
				out = append(out, "--bind", w, w)
				for _, r := range p.protected {
					if Within(r, w) {
						out = append(out, "--ro-bind", r, r)
					}
				}
			}
		}
		out = append(out, "--remount-ro", m)
	}
	for _, s := range p.sockets {
		out = append(out, "--ro-bind-try", "/dev/null", s)
	}
	if p.dir != "" {
		out = append(out, "--chdir", p.dir)
	}
	out = append(out, "--")
	out = append(out, p.inner...)
	out = append(out, p.path)
	return append(out, p.args[1:]...)
}

// bwrapPlan is what bwrapArgs confines.
type bwrapPlan struct {
	writable, protected, sockets []string
	// masked are hidden (an empty read-only tmpfs, /dev/null over a
	// file); visible inside them are bound read-only again.
	masked, visible   []string
	network, dropCaps bool
	launcher          bool // the command is a launcher
	dir, path         string
	args              []string
	inner             []string
}

// rootCaps are the capabilities a confined root command keeps: those that
// let root act on files it may write, none that reach past the sandbox.
var rootCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_SETGID", "CAP_SETUID", "CAP_KILL"}
