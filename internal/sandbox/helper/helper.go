// Package helper is the confining helper a confined command is started
// through: meka re-executes itself with Marker as its first argument,
// and this package's init confines the process (mounts, capabilities,
// Landlock) and executes the command; or, as a launcher (Spec.Serve),
// sets the namespaces and mounts up once and starts every command meka
// sends it, each confined alone (see serve).
//
// It imports only the lowest packages of the standard library (runtime,
// syscall, unsafe), so by Go's initialisation order (the first package by
// import path whose imports are all initialised goes next) its init runs
// before the initialisation of almost everything else in the binary: the
// helper never pays for HTTP clients, SDKs or SQLite it does not use.
// Every binary that imports internal/sandbox imports this package, so
// none needs to call anything for the helper to work.
package helper

// Marker is the first argument that makes the binary the helper.
const Marker = "__meka_sandbox"

// Spec is what the helper does before it executes the command.
type Spec struct {
	// Path is the program to execute once confined.
	Path string
	// Writable are the canonical paths writes stay allowed beneath.
	Writable []string
	// Mount is set when the helper runs in namespaces of its own and
	// binds the tree read-only itself (not under bwrap).
	Mount bool
	// Protected are bound read-only over the writable paths.
	Protected []string
	// Sockets are outside Unix sockets to mask.
	Sockets []string
	// Masked (meka's data and config directories) are hidden from the
	// command, read and write: an empty read-only tmpfs over each
	// directory, /dev/null over a file. Of what lies inside, Visible (the
	// session's scratchpad) shows through read-only, and the writable
	// paths read-write.
	Masked, Visible []string
	// Network leaves the network open: no loopback to bring up, no
	// abstract-socket scope.
	Network bool
	// Landlock confines writes to Writable (and signals and abstract
	// sockets) with Landlock; without it the helper only runs in the
	// mounts bubblewrap made.
	Landlock bool
	// Serve makes the helper a launcher: instead of executing Path it
	// starts every command meka sends on ServeFD, each confined alone.
	Serve bool
	// TempRoot, for a launcher, is the directory holding its commands'
	// temp dirs: bound writable, while each command's Landlock domain
	// writes only its own temp dir there.
	TempRoot string
	// MapIDs, set when the helper starts in a user namespace of its own,
	// makes it map UID and GID to themselves there, as its first act.
	MapIDs   bool
	UID, GID int
}

// Args returns the arguments that follow the executable's path to run
// args (args[0] the command's name) confined by s. Each field is an
// argument of its own, so a path may hold any byte but NUL.
func (s Spec) Args(args []string) []string {
	out := []string{Marker}
	if s.Path != "" {
		out = append(out, "p="+s.Path)
	}
	for _, w := range s.Writable {
		out = append(out, "w="+w)
	}
	for _, p := range s.Protected {
		out = append(out, "r="+p)
	}
	for _, p := range s.Sockets {
		out = append(out, "s="+p)
	}
	for _, p := range s.Masked {
		out = append(out, "h="+p)
	}
	for _, p := range s.Visible {
		out = append(out, "v="+p)
	}
	if s.Mount {
		out = append(out, "m")
	}
	if s.Network {
		out = append(out, "n")
	}
	if s.Landlock {
		out = append(out, "l")
	}
	if s.Serve {
		out = append(out, "z")
	}
	if s.TempRoot != "" {
		out = append(out, "t="+s.TempRoot)
	}
	if s.MapIDs {
		out = append(out, "u="+itoa(s.UID)+":"+itoa(s.GID))
	}
	out = append(out, "--")
	return append(out, args...)
}

// parse reads what Args wrote (without Marker) back into a spec and the
// command's arguments.
func parse(a []string) (Spec, []string, error) {
	var s Spec
	for i, arg := range a {
		if arg == "--" && s.Serve {
			if s.Path != "" || i+1 != len(a) {
				return s, nil, errorString("a launcher takes no command")
			}
			return s, nil, nil
		}
		if arg == "--" {
			if s.Path == "" || i+1 >= len(a) {
				return s, nil, errorString("no command")
			}
			return s, a[i+1:], nil
		}
		key, val := arg, ""
		if len(arg) >= 2 && arg[1] == '=' {
			key, val = arg[:1], arg[2:]
		}
		switch key {
		case "p":
			s.Path = val
		case "w":
			s.Writable = append(s.Writable, val)
		case "r":
			s.Protected = append(s.Protected, val)
		case "s":
			s.Sockets = append(s.Sockets, val)
		case "h":
			s.Masked = append(s.Masked, val)
		case "v":
			s.Visible = append(s.Visible, val)
		case "m":
			s.Mount = true
		case "n":
			s.Network = true
		case "l":
			s.Landlock = true
		case "z":
			s.Serve = true
		case "t":
			s.TempRoot = val
		case "u":
			uid, gid, ok := cut(val, ':')
			var err1, err2 bool
			s.UID, err1 = atoi(uid)
			s.GID, err2 = atoi(gid)
			if !ok || err1 || err2 {
				return s, nil, errorString("bad ids " + val)
			}
			s.MapIDs = true
		default:
			return s, nil, errorString("unknown argument " + arg)
		}
	}
	return s, nil, errorString("no command")
}

// WritableUnder returns the writable paths inside a protected one (a
// temp dir in meka's data directory), bound writable again over it. The
// paths are canonical.
func WritableUnder(writable, protected []string) []string {
	var out []string
	for _, w := range writable {
		for _, p := range protected {
			if w != p && within(w, p) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// within reports whether the canonical path p lies in dir or is dir.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}

type errorString string

func (e errorString) Error() string { return string(e) }

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// atoi parses a non-negative decimal; bad reports anything else.
func atoi(s string) (n int, bad bool) {
	if s == "" || len(s) > 10 {
		return 0, true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, true
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, false
}
