package helper

import (
	"syscall"
	"unsafe"
)

// Landlock's syscalls (the same number on every architecture) and the
// parts of its ABI the helper uses.
const (
	sysCreateRuleset = 444
	sysAddRule       = 445
	sysRestrictSelf  = 446

	createRulesetVersion = 1 << 0
	rulePathBeneath      = 1

	fsExecute    = 1 << 0
	fsWriteFile  = 1 << 1
	fsReadFile   = 1 << 2
	fsReadDir    = 1 << 3
	fsRemoveDir  = 1 << 4
	fsRemoveFile = 1 << 5
	fsMakeChar   = 1 << 6
	fsMakeDir    = 1 << 7
	fsMakeReg    = 1 << 8
	fsMakeSock   = 1 << 9
	fsMakeFifo   = 1 << 10
	fsMakeBlock  = 1 << 11
	fsMakeSym    = 1 << 12
	fsRefer      = 1 << 13 // ABI 2
	fsTruncate   = 1 << 14 // ABI 3
	fsIoctlDev   = 1 << 15 // ABI 5

	scopeAbstractUnixSocket = 1 << 0 // ABI 6
	scopeSignal             = 1 << 1 // ABI 6

	fsRead  = fsExecute | fsReadFile | fsReadDir
	fsWrite = fsWriteFile | fsRemoveDir | fsRemoveFile | fsMakeChar | fsMakeDir | fsMakeReg |
		fsMakeSock | fsMakeFifo | fsMakeBlock | fsMakeSym | fsTruncate
	// fsFile are the rights a rule on a file (not a directory) may hold.
	fsFile = fsExecute | fsWriteFile | fsReadFile | fsTruncate
)

// devFiles and devDirs are the devices every shell expects to write.
var (
	devFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"}
	devDirs  = []string{"/dev/pts", "/dev/shm"}
)

type rulesetAttr struct {
	handledFS, handledNet, scoped uint64
}

// pathBeneath is struct landlock_path_beneath_attr; the kernel's is
// packed (12 bytes), which this one's first 12 bytes are.
type pathBeneath struct {
	access uint64
	fd     int32
}

// oPath is O_PATH, which package syscall lacks; the same on every
// architecture Go supports.
const oPath = 0x200000

// ABI returns the kernel's Landlock ABI version, 0 without one.
func ABI() int {
	v, _, e := syscall.Syscall(sysCreateRuleset, 0, 0, createRulesetVersion)
	if e != 0 {
		return 0
	}
	return int(v)
}

// restrict confines this thread (and what it executes) to write only
// beneath writable and to the common devices, reading everywhere; with
// the network closed, to no abstract socket outside (ABI 6); and always
// to signal only its own domain (ABI 6). Every right the kernel's ABI
// knows is handled, refer among them and granted nowhere (a rename across
// directories gets EXDEV, and mv copies). TCP is left to the network
// namespace both backends close the network with: Landlock's TCP rules
// would also refuse a test's server on the namespace's own loopback.
// meka has checked that the kernel offers Landlock.
func restrict(writable []string, network bool) error {
	abi := ABI()
	if abi < 1 {
		return errorString("the kernel offers no Landlock")
	}
	var handled uint64 = fsRead | fsWrite&^fsTruncate
	if abi >= 2 {
		handled |= fsRefer
	}
	if abi >= 3 {
		handled |= fsTruncate
	}
	if abi >= 5 {
		handled |= fsIoctlDev
	}
	attr := rulesetAttr{handledFS: handled}
	if abi >= 6 {
		attr.scoped = scopeSignal
		if !network {
			attr.scoped |= scopeAbstractUnixSocket
		}
	}
	size := unsafe.Sizeof(attr)
	if abi < 6 {
		size = 16 // the kernel knows no scoped field
	}
	if abi < 4 {
		size = 8
	}
	rs, _, e := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return wrap("create ruleset", e)
	}
	ruleset := int(rs)
	defer syscall.Close(ruleset)
	rw := (fsRead | fsWrite) & handled
	rules := []struct {
		paths  []string
		access uint64
	}{
		{[]string{"/"}, fsRead},
		{writable, rw},
		{devFiles, rw & fsFile},
		{devDirs, rw},
	}
	for _, r := range rules {
		for _, p := range r.paths {
			if err := addRule(ruleset, p, r.access); err != nil {
				return err
			}
		}
	}
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return wrap("set no_new_privs", err)
	}
	if _, _, e := syscall.Syscall(sysRestrictSelf, uintptr(ruleset), 0, 0); e != 0 {
		return wrap("restrict self", e)
	}
	return nil
}

// addRule allows access beneath path; a missing path is skipped.
func addRule(ruleset int, path string, access uint64) error {
	fd, err := syscall.Open(path, oPath|syscall.O_CLOEXEC, 0)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return wrap("open "+path, err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return wrap("stat "+path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		access &= fsFile
	}
	pb := pathBeneath{access: access, fd: int32(fd)}
	if _, _, e := syscall.Syscall6(sysAddRule, uintptr(ruleset), rulePathBeneath, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); e != 0 {
		return wrap("allow "+path, e)
	}
	return nil
}
