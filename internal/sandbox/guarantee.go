package sandbox

import (
	"fmt"
	"strings"
)

// Guarantees are what a backend can promise on this machine for a
// confined command. Every field must hold for a backend to confine: a
// level that needs one that does not hold refuses the command.
type Guarantees struct {
	// Backend is the backend the guarantees are of.
	Backend string
	// Writes: nothing outside the writable roots is created, changed or
	// removed.
	Writes bool
	// Metadata: nothing outside the writable roots changes mode, times,
	// extended attributes or owner (a mount namespace binding the tree
	// read-only).
	Metadata bool
	// Signals: no signal reaches a process outside the command's own
	// tree (Landlock's signal scope or a PID namespace).
	Signals bool
	// Network: no TCP, UDP, abstract or outside Unix socket reaches
	// anything (a network namespace with outside sockets masked); only
	// required while the network is closed.
	Network bool
	// Secrets: meka's own memory and environment are out of reach
	// (Landlock's ptrace scope or a PID namespace with its own /proc).
	Secrets bool
	// Missing says why each guarantee that does not hold cannot.
	Missing []string
}

// Holds reports whether every guarantee a confined command needs holds;
// Network counts only when the network stays closed.
func (g Guarantees) Holds(network bool) bool {
	return g.Writes && g.Metadata && g.Signals && g.Secrets && (network || g.Network)
}

// String describes the guarantees in a sentence for tool descriptions and
// /status.
func (g Guarantees) String() string {
	var held []string
	add := func(ok bool, what string) {
		if ok {
			held = append(held, what)
		}
	}
	add(g.Writes, "writes")
	add(g.Metadata, "metadata")
	add(g.Signals, "signals")
	add(g.Network, "network")
	add(g.Secrets, "meka's memory")
	s := fmt.Sprintf("%s confines %s", g.Backend, strings.Join(held, ", "))
	if len(g.Missing) > 0 {
		s += "; not: " + strings.Join(g.Missing, "; ")
	}
	return s
}

// Describe says in a line which backend confines read and workspace
// commands here and what it guarantees, or that none can and why, for
// /status. network is whether [permissions] network opens the network.
func Describe(network bool) string { return hostProbe().describe(network) }

func (p probe) describe(network bool) string {
	net := "network closed"
	if network {
		net = "network open ([permissions] network = true)"
	}
	for _, b := range Backends {
		if g := p.guarantees(b); g.Holds(network) {
			return fmt.Sprintf("%s (writes, metadata, signals and meka's memory confined; %s)", g.Backend, net)
		}
	}
	_, err := p.available(Workspace, network)
	return fmt.Sprintf("none: shell commands need unrestricted (%v)", err)
}
