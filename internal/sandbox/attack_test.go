//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"
)

// attackMarker makes the test binary run one attack and print "ok" or
// "denied: why" instead of the tests: the confined commands of the suite
// are this binary, so no shell tool (nc, setfattr, python) is needed.
const attackMarker = "__meka_attack"

// runAttack performs os.Args[2:] and exits.
func runAttack(args []string) {
	err := attack(args[0], args[1:])
	if err != nil {
		fmt.Printf("denied: %v\n", err)
	} else {
		fmt.Println("ok")
	}
	os.Exit(0)
}

func attack(op string, args []string) error {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch op {
	case "write":
		return os.WriteFile(arg(0), []byte("pwned"), 0o644)
	case "mkdir-write":
		if err := os.MkdirAll(filepath.Dir(arg(0)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(arg(0), []byte("pwned"), 0o755)
	case "chmod":
		return os.Chmod(arg(0), 0o777)
	case "utimes":
		t := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		return os.Chtimes(arg(0), t, t)
	case "setxattr":
		return unix.Setxattr(arg(0), "user.meka", []byte("x"), 0)
	case "chown":
		return os.Lchown(arg(0), os.Getuid(), os.Getgid())
	case "kill":
		pid, _ := strconv.Atoi(arg(0))
		return unix.Kill(pid, unix.SIGCONT)
	case "kill-marked":
		// Every process whose command line holds the mark, by the pid
		// /proc shows; none found is no signal sent. /proc may be another
		// PID namespace's (a launcher's): itself is skipped by the name
		// /proc/self has there, and a pid that names one of its own
		// threads here, which would signal itself (ignored, as its
		// namespace's process 1) rather than the target.
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return err
		}
		self, _ := os.Readlink("/proc/self")
		own := ownThreads()
		sent := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || e.Name() == self || own[pid] {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil || !bytes.Contains(b, []byte(arg(0))) {
				continue
			}
			if unix.Kill(pid, unix.SIGKILL) == nil {
				sent++
			}
		}
		if sent == 0 {
			return fmt.Errorf("no process signalled")
		}
		return nil
	case "tcp":
		c, err := net.DialTimeout("tcp", arg(0), 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "tcp-listen":
		// Listens on 127.0.0.1, says where, and takes one connection.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		fmt.Println(l.Addr())
		c, err := l.Accept()
		if err != nil {
			return err
		}
		return c.Close()
	case "tcp-self":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := net.DialTimeout("tcp", l.Addr().String(), 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "udp":
		c, err := net.Dial("udp", arg(0))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte(arg(1)))
		return err
	case "unix", "abstract":
		c, err := net.DialTimeout("unix", arg(0), 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case "environ":
		b, err := os.ReadFile(arg(0))
		if err == nil && len(b) == 0 {
			return fmt.Errorf("empty")
		}
		return err
	case "mem":
		// A readable mapping's first bytes, through /proc/<pid>/mem.
		maps, err := os.ReadFile("/proc/" + arg(0) + "/maps")
		if err != nil {
			return err
		}
		var start uint64
		for line := range strings.Lines(string(maps)) {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(f[1], "r") {
				lo, _, _ := strings.Cut(f[0], "-")
				start, err = strconv.ParseUint(lo, 16, 64)
				if err != nil {
					return err
				}
				break
			}
		}
		f, err := os.Open("/proc/" + arg(0) + "/mem")
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.ReadAt(make([]byte, 16), int64(start))
		return err
	case "fds":
		_, err := os.ReadDir("/proc/" + arg(0) + "/fd")
		return err
	case "env":
		var leaked []string
		for _, kv := range os.Environ() {
			if strings.Contains(kv, "plantedsecret") {
				name, _, _ := strings.Cut(kv, "=")
				leaked = append(leaked, name)
			}
		}
		if len(leaked) > 0 {
			fmt.Printf("%d of %d secrets\n", len(leaked), len(plantedSecrets))
			return nil
		}
		return fmt.Errorf("0 of %d secrets", len(plantedSecrets))
	case "mount":
		return unix.Mount("tmpfs", arg(0), "tmpfs", 0, "")
	case "read":
		_, err := os.ReadFile(arg(0))
		return err
	case "ls":
		// Lists arg(0) and looks for arg(1) among its entries.
		entries, err := os.ReadDir(arg(0))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() == arg(1) {
				return nil
			}
		}
		return fmt.Errorf("%s not listed", arg(1))
	case "umount-read":
		// Take the mask off (as far as this process may: nothing to take
		// off unconfined), then read: the read is the verdict.
		_ = unix.Unmount(arg(0), unix.MNT_DETACH)
		_, err := os.ReadFile(arg(1))
		return err
	case "userns-umount-read":
		// umount-read again in a user and mount namespace of its own,
		// where it holds every capability over the mounts it copied.
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd := exec.Command(exe, attackMarker, "umount-read", arg(0), arg(1))
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		out, err := cmd.Output()
		if err != nil {
			return err
		}
		if s := strings.TrimSpace(string(out)); s != "ok" {
			return errors.New(strings.TrimPrefix(s, "denied: "))
		}
		return nil
	case "symlink-write":
		link := filepath.Join(arg(0), "escape")
		if err := os.Symlink(arg(1), link); err != nil {
			return err
		}
		return os.WriteFile(link, []byte("pwned"), 0o644)
	}
	return fmt.Errorf("unknown attack %q", op)
}

// ownThreads returns the ids of this process's threads in its own PID
// namespace: the last field of each thread's NSpid, whichever namespace
// /proc belongs to.
func ownThreads() map[int]bool {
	own := map[int]bool{}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status")
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "NSpid:" {
				if id, err := strconv.Atoi(f[len(f)-1]); err == nil {
					own[id] = true
				}
			}
		}
	}
	return own
}

// plantedSecrets are secret-like variables of the kind found in a
// developer's environment; the suite plants each with a marked value.
var plantedSecrets = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID", "DATABASE_URL", "STRIPE_SECRET_KEY",
	"SECRET_KEY", "SSH_AUTH_SOCK", "GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "OPENAI_API_KEY",
	"ANTHROPIC_API_KEY", "MY_PROVIDER_KEY", "PGPASSWORD", "MYSQL_PWD", "REDIS_URL", "SENTRY_DSN",
	"SLACK_WEBHOOK_URL", "DOCKER_AUTH_CONFIG", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_SECRET",
	"HF_TOKEN", "PASSWORD", "API_KEY", "VAULT_TOKEN",
}

// verdict is what a row expects at one mode: "ok", "denied" or "any"
// (the outcome depends on who runs the suite, as mounting as root does).
type verdict = string

type attackRow struct {
	name string
	// args builds the attack's arguments from the suite's fixture.
	args func(f *fixture) []string
	// read, workspace, unrestricted are the expected outcomes.
	read, workspace, unrestricted verdict
	// rootUnrestricted, when set, replaces unrestricted for a suite run
	// as root.
	rootUnrestricted verdict
	// received, for UDP, judges by what the listener got, not the sender.
	received bool
	// detail shows the attack's own words in the table.
	detail bool
	// ownTemp writes into the command's own temp dir (args unused).
	ownTemp bool
	// sibling judges by whether the sibling command died.
	sibling bool
}

var attackRows = []attackRow{
	{name: "write outside", args: func(f *fixture) []string { return []string{"write", f.out + "/new"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "write workspace", args: func(f *fixture) []string { return []string{"write", f.ws + "/new"} }, read: "denied", workspace: "ok", unrestricted: "ok"},
	{name: "write workspace, relative path", args: func(f *fixture) []string { return []string{"write", "relative.txt"} }, read: "denied", workspace: "ok", unrestricted: "ok"},
	{name: "symlink out of workspace", args: func(f *fixture) []string { return []string{"symlink-write", f.ws, f.out + "/via-link"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "chmod outside", args: func(f *fixture) []string { return []string{"chmod", f.out + "/file"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "touch -d outside", args: func(f *fixture) []string { return []string{"utimes", f.out + "/file"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "setxattr outside", args: func(f *fixture) []string { return []string{"setxattr", f.out + "/file"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "chown outside", args: func(f *fixture) []string { return []string{"chown", f.out + "/file"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "chmod workspace", args: func(f *fixture) []string { return []string{"chmod", f.ws + "/file"} }, read: "denied", workspace: "ok", unrestricted: "ok"},
	{name: "mount over outside", args: func(f *fixture) []string { return []string{"mount", f.out + "/mnt"} }, read: "denied", workspace: "denied", unrestricted: "any"},
	{name: "signal outside process", args: func(f *fixture) []string { return []string{"kill", strconv.Itoa(f.victim)} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "tcp to 127.0.0.1", args: func(f *fixture) []string { return []string{"tcp", f.tcp} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "own server on loopback", args: func(f *fixture) []string { return []string{"tcp-self"} }, read: "ok", workspace: "ok", unrestricted: "ok"},
	{name: "udp to 127.0.0.1", args: func(f *fixture) []string { return []string{"udp", f.udp, f.token()} }, read: "denied", workspace: "denied", unrestricted: "ok", received: true},
	{name: "unix socket outside", args: func(f *fixture) []string { return []string{"unix", f.outSock} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "unix socket in workspace", args: func(f *fixture) []string { return []string{"unix", f.wsSock} }, read: "denied", workspace: "ok", unrestricted: "ok"},
	{name: "abstract unix socket", args: func(f *fixture) []string { return []string{"abstract", f.abstract} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "env: 25 planted secrets", args: func(f *fixture) []string { return []string{"env"} }, read: "denied", workspace: "denied", unrestricted: "any", detail: true},
	// meka is not dumpable (TestMain makes this process so, as meka's
	// main does): its /proc files are root's and reading them needs
	// CAP_SYS_PTRACE, which only an unrestricted root command has.
	{name: "/proc/<meka>/environ", args: func(f *fixture) []string { return []string{"environ", fmt.Sprintf("/proc/%d/environ", os.Getpid())} }, read: "denied", workspace: "denied", unrestricted: "denied", rootUnrestricted: "ok"},
	{name: "/proc/<meka>/mem", args: func(f *fixture) []string { return []string{"mem", strconv.Itoa(os.Getpid())} }, read: "denied", workspace: "denied", unrestricted: "denied", rootUnrestricted: "ok"},
	{name: "/proc/<meka>/fd", args: func(f *fixture) []string { return []string{"fds", strconv.Itoa(os.Getpid())} }, read: "denied", workspace: "denied", unrestricted: "denied", rootUnrestricted: "ok"},
	{name: "write config dir in workspace", args: func(f *fixture) []string { return []string{"write", f.ws + "/config/config.toml"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "write data dir in workspace", args: func(f *fixture) []string { return []string{"write", f.ws + "/data/meka.db"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "write .git/hooks in workspace", args: func(f *fixture) []string { return []string{"write", f.ws + "/.git/hooks/pre-commit"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	// The command's own temp dir: for a command Command builds, inside
	// the data directory as a background task's once was (writable though
	// its parent is protected); for a launched one, in MkShellTemp's.
	{name: "write own temp dir", ownTemp: true, read: "ok", workspace: "ok", unrestricted: "ok"},
	// Another command confined alike, running: its temp dir is not
	// writable here, and its own PID namespace hides it from kill(2)
	// though /proc shows it.
	{name: "write a sibling's temp dir", args: func(f *fixture) []string { return []string{"write", f.siblingTemp + "/x"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "chmod a sibling's temp dir", args: func(f *fixture) []string { return []string{"chmod", f.siblingTemp} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "signal a sibling command", args: func(f *fixture) []string { return []string{"kill-marked", f.siblingMark} }, read: "denied", workspace: "denied", unrestricted: "ok", sibling: true},
	{name: "create .git/hooks where missing", args: func(f *fixture) []string { return []string{"mkdir-write", f.ws + "/sub/.git/hooks/pre-commit"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "write .git/config in workspace", args: func(f *fixture) []string { return []string{"write", f.ws + "/.git/config"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	// meka's own state (Spec.Masked) is hidden, read and write: the
	// data directory outside the workspace and in it, the config
	// directory; of it only the session's own scratchpad shows, read-only.
	{name: "read serve.token", args: func(f *fixture) []string { return []string{"read", f.data + "/serve.token"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read the database", args: func(f *fixture) []string { return []string{"read", f.data + "/meka.db"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read a log", args: func(f *fixture) []string { return []string{"read", f.data + "/logs/serve.log"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "list the data dir", args: func(f *fixture) []string { return []string{"ls", f.data, "serve.token"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "write the data dir", args: func(f *fixture) []string { return []string{"write", f.data + "/serve.token"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read the config dir", args: func(f *fixture) []string { return []string{"read", f.config + "/config.toml"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read another session's scratchpad", args: func(f *fixture) []string { return []string{"read", f.data + "/sessions/other/scratch/spill.txt"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read own scratchpad", args: func(f *fixture) []string { return []string{"read", f.scratch + "/spill.txt"} }, read: "ok", workspace: "ok", unrestricted: "ok"},
	{name: "write own scratchpad", args: func(f *fixture) []string { return []string{"write", f.scratch + "/spill.txt"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read data dir in workspace", args: func(f *fixture) []string { return []string{"read", f.ws + "/data/meka.db"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "read config dir in workspace", args: func(f *fixture) []string { return []string{"read", f.ws + "/config/config.toml"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "unmount the mask, read serve.token", args: func(f *fixture) []string { return []string{"umount-read", f.data, f.data + "/serve.token"} }, read: "denied", workspace: "denied", unrestricted: "ok"},
	{name: "unmount it in a new user namespace", args: func(f *fixture) []string { return []string{"userns-umount-read", f.data, f.data + "/serve.token"} }, read: "denied", workspace: "denied", unrestricted: "any"},
}

// runAttackCommand runs one attack as Command builds it or, launched,
// through Launch, and returns what it printed, or how it failed.
func runAttackCommand(t *testing.T, spec Spec, launched bool) (string, error) {
	var stdout, stderr lockedBuffer
	if !launched {
		cmd, err := Command(t.Context(), spec)
		if err != nil {
			return "", err
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Sprintf("failed: %v %s", err, stderr.String()), nil
		}
		return strings.TrimSpace(stdout.String()), nil
	}
	run, err := Launch(t.Context(), spec, "", &stdout, &stderr)
	if err != nil {
		return "", err
	}
	if run.Pid() != 0 {
		t.Fatalf("a confined command with a MkShellTemp temp dir was not launched")
	}
	if err := run.Wait(); err != nil {
		return fmt.Sprintf("failed: %v %s", err, stderr.String()), nil
	}
	return strings.TrimSpace(stdout.String()), nil
}

// shellTemp is a temp dir from MkShellTemp, removed at the test's end.
func shellTemp(t *testing.T) string {
	t.Helper()
	d, err := MkShellTemp()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// sibling starts another command confined as spec, launched alike, which
// the "sibling" rows aim at, and returns what stops it.
func (f *fixture) sibling(t *testing.T, spec Spec, launched bool) (stop func()) {
	t.Helper()
	f.siblingMark = fmt.Sprintf("meka-sibling-%d-%d", os.Getpid(), time.Now().UnixNano())
	spec.Args = []string{"sh", "-c", "sleep 1000; :", f.siblingMark}
	spec.TempDir = canonTemp(t)
	if launched {
		spec.TempDir = shellTemp(t)
	}
	f.siblingTemp = spec.TempDir
	ctx, cancel := context.WithCancel(t.Context())
	var run *Running
	var err error
	if launched {
		run, err = Launch(ctx, spec, "", io.Discard, io.Discard)
	} else {
		var cmd *exec.Cmd
		if cmd, err = Command(ctx, spec); err == nil {
			run, err = Start(cmd, io.Discard, io.Discard)
		}
	}
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		run.Wait()
		close(done)
	}()
	f.siblingDone = done
	return sync.OnceFunc(func() { cancel(); <-done })
}

// siblingDied reports whether the sibling command ends within a bound,
// once an attack claims to have signalled it: it dies at once when the
// signal reached it.
func (f *fixture) siblingDied() bool {
	select {
	case <-f.siblingDone:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// fixture is one column's workspace, outside directory and the listeners
// and process the attacks aim at.
type fixture struct {
	ws, out, tmp string
	// data and config are meka's state outside the workspace; scratch
	// is the session's scratchpad in data.
	data, config, scratch               string
	victim                              int
	tcp, udp, outSock, wsSock, abstract string
	udpConn                             *net.UDPConn
	seq                                 int
	// siblingMark is the last argument of a command confined as the
	// column's, which the sibling rows aim at; siblingDone is closed when
	// it has ended; siblingTemp is its temp dir.
	siblingMark string
	siblingDone chan struct{}
	siblingTemp string
}

func (f *fixture) token() string { f.seq++; return fmt.Sprintf("token-%d", f.seq) }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ws: canonTemp(t), out: canonTemp(t)}
	// The private temp dir lies in the data directory, as a background
	// task's does: writable though its parent is protected.
	f.tmp = f.ws + "/data/task.tmp"
	for _, d := range []string{f.ws + "/.git/hooks", f.ws + "/config", f.tmp, f.out + "/mnt", f.ws + "/sub/.git"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := canonTemp(t)
	f.data, f.config = state+"/data", state+"/config"
	f.scratch = f.data + "/sessions/this/scratch"
	for _, p := range []string{f.ws + "/file", f.out + "/file", f.ws + "/.git/config", f.ws + "/config/config.toml", f.ws + "/data/meka.db",
		f.data + "/serve.token", f.data + "/meka.db", f.data + "/logs/serve.log", f.data + "/sessions/other/scratch/spill.txt",
		f.scratch + "/spill.txt", f.config + "/config.toml"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, p, "keep")
	}
	// Unrestricted, root mounts for real: unmount before the cleanup.
	t.Cleanup(func() { unix.Unmount(f.out+"/mnt", unix.MNT_DETACH) })
	victim := exec.Command("sleep", "1000")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	f.victim = victim.Process.Pid

	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.tcp = tl.Addr().String()
	f.udpConn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f.udp = f.udpConn.LocalAddr().String()
	f.outSock, f.wsSock = f.out+"/agent.sock", f.ws+"/dev.sock"
	f.abstract = fmt.Sprintf("@meka-attack-%d-%d", os.Getpid(), time.Now().UnixNano())
	var ls []net.Listener
	for _, addr := range []string{f.outSock, f.wsSock, f.abstract} {
		l, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	ls = append(ls, tl)
	for _, l := range ls {
		go acceptAll(l)
	}
	t.Cleanup(func() {
		for _, l := range ls {
			l.Close()
		}
		f.udpConn.Close()
	})
	return f
}

// acceptAll takes every connection to l and closes it, until l closes.
func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// received reports whether the UDP listener got token: loopback delivers
// before sendto returns, so it is queued by the time the sender exited.
func (f *fixture) received(token string) bool {
	buf := make([]byte, 64)
	for {
		f.udpConn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, _, err := f.udpConn.ReadFromUDP(buf)
		if err != nil {
			return false
		}
		if string(buf[:n]) == token {
			return true
		}
	}
}

// TestAttackSuite runs every attack at read, workspace and unrestricted on
// each backend this machine offers, and prints the table (go test -v).
func TestAttackSuite(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Each confined level runs twice: as Command builds the command (a
	// helper or bubblewrap per command) and through Launch's launcher,
	// which shell_execute uses (one helper for many commands).
	type column struct {
		name     string
		mode     Mode
		backend  string
		launched bool
	}
	var cols []column
	for _, b := range usableBackends(t) {
		cols = append(cols, column{b + "/read", ReadOnly, b, false}, column{b + "/workspace", Workspace, b, false},
			column{b + "/read/launched", ReadOnly, b, true}, column{b + "/workspace/launched", Workspace, b, true})
	}
	cols = append(cols, column{"unrestricted", Unrestricted, "", false})
	if len(cols) == 1 {
		t.Log("no backend confines here: only the unrestricted column runs")
	}

	base := []string{testPath, "HOME=" + os.Getenv("HOME")}
	for _, s := range plantedSecrets {
		base = append(base, s+"=plantedsecret-"+strings.ToLower(s))
	}
	results := make([][]string, len(attackRows))
	failed := false
	for _, col := range cols {
		f := newFixture(t)
		env := ConfinedEnv(base, nil)
		if col.mode == Unrestricted {
			env = ScrubEnv(base, []string{"MY_PROVIDER_KEY"})
		}
		// A -race binary otherwise sleeps a second as it exits.
		env = append(env, "GORACE=atexit_sleep_ms=0")
		spec := Spec{
			Dir: f.ws, Env: env, Mode: col.mode, Writable: []string{f.ws, f.ws + "/sub"}, TempDir: f.tmp,
			Backend: col.backend, Protected: []string{f.ws + "/config", f.ws + "/data"},
			Masked: []string{f.ws + "/config", f.ws + "/data", f.data, f.config}, Visible: []string{f.scratch},
		}
		if col.launched {
			spec.TempDir = shellTemp(t)
		}
		stopSibling := f.sibling(t, spec, col.launched)
		for i, row := range attackRows {
			spec := spec
			if col.launched {
				spec.TempDir = shellTemp(t)
			}
			var args []string
			if row.ownTemp {
				args = []string{"write", spec.TempDir + "/x"}
			} else {
				args = row.args(f)
			}
			spec.Args = append([]string{exe, attackMarker}, args...)
			got, err := runAttackCommand(t, spec, col.launched)
			if err != nil {
				t.Fatalf("%s: %v", col.name, err)
			}
			outcome := "ok"
			if !strings.HasSuffix(got, "ok") {
				outcome = "denied"
			}
			if row.sibling && outcome == "ok" && !f.siblingDied() {
				outcome = "denied" // it signalled something else
			}
			if row.received {
				outcome = "denied"
				if f.received(args[len(args)-1]) {
					outcome = "ok"
				}
			}
			want := map[Mode]verdict{ReadOnly: row.read, Workspace: row.workspace, Unrestricted: row.unrestricted}[col.mode]
			if col.mode == Unrestricted && row.rootUnrestricted != "" && os.Geteuid() == 0 {
				want = row.rootUnrestricted
			}
			cell := outcome
			if want != "any" && want != outcome {
				cell = "FAIL " + outcome
				failed = true
				t.Errorf("%s: %s = %s, want %s (%s)", col.name, row.name, outcome, want, got)
			}
			if row.detail {
				detail := strings.TrimSpace(strings.TrimSuffix(got, "ok"))
				if _, why, ok := strings.Cut(got, "denied: "); ok {
					detail = why
				}
				cell += " (" + detail + ")"
			}
			results[i] = append(results[i], cell)
		}
		stopSibling()
	}
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "attack (uid %d)", os.Getuid())
	for _, c := range cols {
		fmt.Fprintf(w, "\t%s", c.name)
	}
	fmt.Fprintln(w)
	for i, row := range attackRows {
		fmt.Fprintf(w, "%s\t%s\n", row.name, strings.Join(results[i], "\t"))
	}
	w.Flush()
	t.Logf("attack table (Landlock ABI %d):\n%s", landlockABI(), b.String())
	if failed {
		t.Error("some attacks had an unexpected outcome: see the table")
	}
}
