//go:build linux

package pgstore_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/session"
)

// envNetnsRequired makes the multi-host test fail, not skip, when it
// cannot build its network namespaces; .ci/run sets it where it can.
const envNetnsRequired = "MEKA_TEST_NETNS_REQUIRED"

// machine is a network namespace with its own address, reaching the
// database through a forwarder listening on its peer address.
type machine struct {
	ns, name string
	url      string // the database as this machine reaches it
}

// twoMachines builds two network namespaces joined to this one by veth
// pairs, and forwards a port on each pair's near end to the test server,
// which listens on a Unix socket only.
func twoMachines(t *testing.T, dbURL string) [2]machine {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(envNetnsRequired) != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	if os.Geteuid() != 0 {
		skip("network namespaces need root")
	}
	for _, c := range []string{"ip", "unshare"} {
		if _, err := exec.LookPath(c); err != nil {
			skip("%s not found", c)
		}
	}
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	// A /24 per run, from the random tag, so parallel runs do not clash.
	subnet := fmt.Sprintf("10.%d.%d", 100+int(b[0])%100, b[1])
	ipcmd := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	var ms [2]machine
	for i := range ms {
		ns := fmt.Sprintf("meka-%s-%d", tag, i)
		near, far := fmt.Sprintf("mk%s%dh", tag, i), fmt.Sprintf("mk%s%dn", tag, i)
		hostIP := fmt.Sprintf("%s.%d", subnet, 4*i+1)
		nsIP := fmt.Sprintf("%s.%d", subnet, 4*i+2)
		if err := ipcmd("netns", "add", ns); err != nil {
			skip("cannot create a network namespace: %v", err)
		}
		t.Cleanup(func() { ipcmd("netns", "del", ns) })
		for _, args := range [][]string{
			{"link", "add", near, "type", "veth", "peer", "name", far},
			{"link", "set", far, "netns", ns},
			{"addr", "add", hostIP + "/30", "dev", near},
			{"link", "set", near, "up"},
			{"-n", ns, "addr", "add", nsIP + "/30", "dev", far},
			{"-n", ns, "link", "set", far, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := ipcmd(args...); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { ipcmd("link", "del", near) })
		l, err := net.Listen("tcp", hostIP+":0")
		if err != nil {
			t.Fatal(err)
		}
		pgtest.Forward(t, l, dbURL)
		port := l.Addr().(*net.TCPAddr).Port
		ms[i] = machine{ns: ns, name: fmt.Sprintf("host-%c", 'a'+i),
			url: pgtest.URL(hostIP, uint16(port), cfg.User, cfg.Password, cfg.Database)}
	}
	return ms
}

// host is a host process running on a machine.
type host struct {
	t     *testing.T
	name  string
	pid   int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

// start runs a host on m: this test binary, in m's network namespace,
// in a UTS namespace of its own named m.name.
func start(t *testing.T, m machine) *host {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", m.ns, "unshare", "--uts", "sh", "-c", `hostname "$1" && shift && exec "$@"`,
		"sh", m.name, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"=host", envURL+"="+m.url)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, name: m.name, cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	ready := h.expect("ready ")
	var name string
	if _, err := fmt.Sscanf(ready, "ready %s %d", &name, &h.pid); err != nil || name != m.name {
		t.Fatalf("host started as %q, want %s", ready, m.name)
	}
	if h.pid != cmd.Process.Pid {
		t.Fatalf("host pid %d, started %d", h.pid, cmd.Process.Pid)
	}
	return h
}

// stop closes the host's input, which ends it, and waits for it: its
// scheduler finishes what it was doing.
func (h *host) stop() {
	h.t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		h.t.Errorf("%s: %v", h.name, err)
	}
}

func (h *host) send(format string, args ...any) {
	h.t.Helper()
	if _, err := fmt.Fprintf(h.stdin, format+"\n", args...); err != nil {
		h.t.Fatalf("%s: %v", h.name, err)
	}
}

// expect returns the next line, failing unless it begins with prefix.
func (h *host) expect(prefix string) string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			h.t.Fatalf("%s said %q (open %v), want %q…", h.name, l, ok, prefix)
		}
		return l
	case <-h.t.Context().Done():
		h.t.Fatalf("%s: no %q before the test's deadline", h.name, prefix)
	}
	return ""
}

func (h *host) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("signal %s: %v", h.name, err)
	}
}

func newSession(t *testing.T, db *postgres.DB) string {
	t.Helper()
	m, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w", Permission: "unrestricted"})
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

func onceJob(t *testing.T, db *postgres.DB, sessionID string) string {
	t.Helper()
	j, err := db.Schedules().Create(t.Context(), postgres.Job{SessionID: sessionID, Prompt: "run", Kind: "once", Zone: "UTC",
		NextAt: db.Now().Add(-time.Second)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// TestTwoMachines runs two hosts in two network namespaces, each with
// its own host name (so a lock's same-machine shortcut, which checks
// whether the holder's pid is alive, cannot apply), on one database.
func TestTwoMachines(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ms := twoMachines(t, url)
	db := open(t, url)

	t.Run("HeldSessionRefusedWithHolderNamed", func(t *testing.T) {
		a, b := start(t, ms[0]), start(t, ms[1])
		sid := newSession(t, db)
		a.send("lock %s", sid)
		a.expect("locked " + sid)
		b.send("lock %s", sid)
		want := fmt.Sprintf("error session %s is held by meka pid %d on %s", sid, a.pid, a.name)
		if got := b.expect("error "); got != want {
			t.Errorf("%s said %q, want %q", b.name, got, want)
		}
	})

	t.Run("FencedAppendRefused", func(t *testing.T) {
		a, b := start(t, ms[0]), start(t, ms[1])
		sid := newSession(t, db)
		a.send("lock %s", sid)
		a.expect("locked " + sid)
		a.send("append %s from a", sid)
		a.expect("appended")
		// a stalls: its lease runs out on the server's clock and b takes
		// the session over.
		a.signal(syscall.SIGSTOP)
		b.send("lockwait %s", sid)
		b.expect("locked " + sid)
		a.signal(syscall.SIGCONT)
		a.send("append %s late from a", sid)
		if got := a.expect("error "); !strings.Contains(got, "session lock was taken over") || !strings.Contains(got, ms[1].name) {
			t.Errorf("the stalled host's append: %q, want it fenced off naming %s", got, ms[1].name)
		}
		b.send("append %s from b", sid)
		b.expect("appended")
		rows, err := db.Sessions().Rows(t.Context(), sid, 0)
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, r := range rows {
			titles = append(titles, r.Entry.(session.Notice).Title)
		}
		if strings.Join(titles, ",") != "from a,from b" {
			t.Errorf("rows %q, want a's then b's and nothing of the fenced append", titles)
		}
	})

	t.Run("KilledHostTakenOver", func(t *testing.T) {
		a := start(t, ms[0])
		sid := newSession(t, db)
		a.send("sched hang")
		job := onceJob(t, db, sid)
		a.expect(fmt.Sprintf("firing %s %s", job, sid))
		a.signal(syscall.SIGKILL)
		// b finds the job leased and the session locked by a; it takes
		// both over once their leases run out.
		b := start(t, ms[1])
		b.send("sched deliver")
		b.expect(fmt.Sprintf("fired %s %s", job, sid))
		b.stop()
		if _, err := db.Schedules().Get(t.Context(), job); err == nil {
			t.Error("the one-shot is still there after its delivery")
		}
	})

	t.Run("DueOccurrencesFiredOnce", func(t *testing.T) {
		a, b := start(t, ms[0]), start(t, ms[1])
		a.send("sched deliver")
		b.send("sched deliver")
		want := map[string]string{}
		for range 20 {
			sid := newSession(t, db)
			for range 10 {
				want[onceJob(t, db, sid)] = sid
			}
		}
		fired := map[string]string{}
		per := map[string]int{}
		lines := merge(a, b)
		for len(fired) < len(want) {
			select {
			case l := <-lines:
				var who, job, sid string
				if n, _ := fmt.Sscanf(l, "%s fired %s %s", &who, &job, &sid); n != 3 {
					continue
				}
				if prev, dup := fired[job]; dup {
					t.Fatalf("job %s fired by %s and again by %s", job, prev, who)
				}
				if want[job] != sid {
					t.Fatalf("%s fired %s into %s, want %q", who, job, sid, want[job])
				}
				fired[job] = who
				per[who]++
			case <-t.Context().Done():
				t.Fatalf("%d of %d occurrences fired before the deadline", len(fired), len(want))
			}
		}
		t.Logf("fired per host: %v", per)
		a.stop()
		b.stop()
		// Nothing fires twice: every session has its ten messages once.
		for sid, n := range perSession(want) {
			rows, err := db.Sessions().Rows(t.Context(), sid, 0)
			if err != nil || len(rows) != n {
				t.Errorf("session %s has %d rows (%v), want %d", sid, len(rows), err, n)
			}
		}
		if left, err := db.Schedules().List(t.Context(), ""); err != nil || len(left) != 0 {
			t.Errorf("%d jobs left (%v)", len(left), err)
		}
	})
}

// merge reads both hosts' lines, each prefixed with its host's name.
func merge(hs ...*host) <-chan string {
	out := make(chan string, 1024)
	for _, h := range hs {
		go func() {
			for l := range h.lines {
				out <- h.name + " " + l
			}
		}()
	}
	return out
}

func perSession(jobs map[string]string) map[string]int {
	n := map[string]int{}
	for _, sid := range jobs {
		n[sid]++
	}
	return n
}

func open(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
