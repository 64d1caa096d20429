package schedule_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// The lease tests run schedulers as separate processes on one SQLite
// file: the test binary re-executed with helperEnv naming what to do.
const helperEnv = "MEKA_SCHEDULE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(m.Run())
}

// runHelper is a host: it holds every session and sweeps the database at
// MEKA_DB at the instant MEKA_NOW, as MEKA_OWNER.
//
//	sweep: wait for a line on stdin, then sweep until nothing is due,
//	       printing "fired <job id>" for every turn;
//	hang:  sweep once, print "delivering <job id>" from inside the turn
//	       and block there until killed.
func runHelper(mode string) int {
	ctx := context.Background()
	now, err := time.Parse(time.RFC3339Nano, os.Getenv("MEKA_NOW"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	db, err := sqlite.Open(ctx, os.Getenv("MEKA_DB"), sqlite.Options{BusyTimeout: time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	out := bufio.NewWriter(os.Stdout)
	f := &helperFirer{fire: func(f schedule.Firing) {
		switch mode {
		case "sweep":
			fmt.Fprintf(out, "fired %s\n", f.JobID)
		case "hang":
			fmt.Fprintf(out, "delivering %s\n", f.JobID)
			out.Flush()
			select {}
		}
	}}
	s, err := schedule.New(schedule.Options{
		Store: sqlitestore.New(db.Schedules()), Firer: f, Owner: os.Getenv("MEKA_OWNER"),
		MaxConsecutiveFires: 1000, Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if mode == "sweep" {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	for {
		res, err := s.Sweep(ctx, now)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if res.Due == 0 {
			break
		}
	}
	if err := out.Flush(); err != nil {
		return 1
	}
	return 0
}

// helperFirer holds every session at unrestricted and delivers every turn.
type helperFirer struct{ fire func(schedule.Firing) }

func (h *helperFirer) Holds(context.Context, string) bool { return true }
func (h *helperFirer) Level(string) (permission.Level, bool) {
	return permission.Unrestricted, true
}
func (h *helperFirer) Tool(string, string) (tool.Tool, permission.Level, bool) {
	return nil, 0, false
}
func (h *helperFirer) Fire(_ context.Context, _ string, f schedule.Firing) (bool, error) {
	h.fire(f)
	return true, nil
}

// helper starts the test binary as a helper host.
func helper(t *testing.T, mode, dbPath, owner string, now time.Time) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "MEKA_DB="+dbPath, "MEKA_OWNER="+owner,
		"MEKA_NOW="+now.Format(time.RFC3339Nano))
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
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(stdout)
}

func TestTwoProcessesRunEachOccurrenceOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := newEnv(t, nil)
	path := e.db.Path()
	const n = 200
	var ids []string
	due := map[string]time.Time{}
	for i := range n {
		sid := ""
		if i%10 == 0 {
			m, err := e.db.Sessions().Create(t.Context(), session.Meta{Cwd: e.cwd})
			if err != nil {
				t.Fatal(err)
			}
			sid = m.ID
		} else {
			sid = e.insertedSession(ids)
		}
		j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindEvery, Spec: "1h", Interval: time.Hour,
			NextAt: t0.Add(-time.Duration(i) * time.Second)})
		ids = append(ids, j.ID)
		due[j.ID] = j.NextAt
	}

	type host struct {
		stdin io.WriteCloser
		out   *bufio.Reader
		cmd   *exec.Cmd
	}
	var hosts []host
	for _, owner := range []string{"host-a", "host-b"} {
		cmd, in, out := helper(t, "sweep", path, owner, t0)
		hosts = append(hosts, host{in, out, cmd})
	}
	// Both are up; let them race.
	for _, h := range hosts {
		if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	count := map[string]int{}
	per := make([]int, len(hosts))
	for i, h := range hosts {
		b, err := io.ReadAll(h.out)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
		for _, line := range strings.Fields(string(b)) {
			if line == "fired" {
				continue
			}
			count[line]++
			per[i]++
		}
	}
	t.Logf("host-a fired %d, host-b fired %d", per[0], per[1])
	for _, id := range ids {
		if count[id] != 1 {
			t.Errorf("job %s fired %d times", id, count[id])
		}
	}
	if len(count) != n {
		t.Errorf("%d distinct jobs fired, want %d", len(count), n)
	}
	all, err := e.store.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if j.LeaseOwner != "" || !j.NextAt.Equal(due[j.ID].Add(time.Hour)) || !j.LastFiredAt.Equal(t0) {
			t.Errorf("job after the race: %+v", j)
		}
	}
}

// insertedSession returns the session of the last job inserted.
func (e *env) insertedSession(ids []string) string {
	j, ok := e.job(ids[len(ids)-1])
	if !ok {
		e.t.Fatal("lost a job")
	}
	return j.SessionID
}

// hang starts a helper that claims the one due job and is killed inside
// its turn, and returns the lease it left.
func hang(t *testing.T, e *env, owner string, now time.Time, id string) schedule.Job {
	t.Helper()
	cmd, _, out := helper(t, "hang", e.db.Path(), owner, now)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	if want := "delivering " + id + "\n"; line != want {
		t.Fatalf("helper said %q, want %q", line, want)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	j, ok := e.job(id)
	if !ok {
		t.Fatal("the killed host's job is gone")
	}
	if j.LeaseOwner != owner || !j.LeaseUntil.Equal(now.Add(schedule.DefaultClaimLease)) {
		t.Fatalf("lease after the kill: owner %q until %v", j.LeaseOwner, j.LeaseUntil)
	}
	return j
}

func TestKilledMidDeliveryIsTakenAfterLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "reminder", "in": "1m"}`)
	due := t0.Add(time.Minute)

	hang(t, e, "doomed", due, id)
	// While the lease holds, nobody else takes the occurrence.
	if res := e.sweep(due.Add(59 * time.Minute)); res.Due != 0 || len(e.firer.take()) != 0 {
		t.Fatalf("sweep inside the lease: %+v", res)
	}
	res := e.sweep(due.Add(time.Hour + time.Second))
	if res.Fired != 1 {
		t.Fatalf("sweep after the lease: %+v\n%s", res, e.log)
	}
	f := e.firer.take()
	if len(f) != 1 || !strings.HasPrefix(f[0].Text(), "reminder") || !strings.Contains(f[0].Text(), "It is 1h late") {
		t.Fatalf("turns %v", f)
	}
	if _, ok := e.job(id); ok {
		t.Error("the delivered one-shot was not retired")
	}
}

func TestThreeFailedClaimsParkTheJob(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "crashes meka", "every": "5m"}`)
	now := t0.Add(5 * time.Minute)
	for i := range 3 {
		j := hang(t, e, fmt.Sprintf("doomed-%d", i), now, id)
		if j.FailedClaims != i {
			t.Errorf("claim %d: failed_claims %d", i+1, j.FailedClaims)
		}
		now = now.Add(time.Hour + time.Second)
	}
	res := e.sweep(now)
	if res.Parked != 1 || res.Fired != 0 {
		t.Fatalf("fourth claim: %+v", res)
	}
	j, ok := e.job(id)
	if !ok || j.Held == "" || j.FailedClaims != 3 || j.LeaseOwner != "" {
		t.Fatalf("parked job: %+v", j)
	}
	if !strings.Contains(e.log.String(), "job parked") {
		t.Errorf("parking not logged:\n%s", e.log)
	}
	// Parked: kept, listed, never swept again, cancellable.
	if res := e.sweep(now.Add(24 * time.Hour)); res.Due != 0 {
		t.Errorf("parked job still due: %+v", res)
	}
	list := text(e.call(schedule.ListToolName, sid, permission.Read, `{}`))
	if !strings.Contains(list, "NOT FIRING: parked:") {
		t.Errorf("list:\n%s", list)
	}
	if res := e.call(schedule.CancelToolName, sid, permission.Read, fmt.Sprintf(`{"id": %q}`, id[:8])); res.IsError {
		t.Errorf("cancel a parked job: %s", text(res))
	}
}

// A host that declines a job it cannot take hands it back uncounted.
func TestDeclineIsNotCounted(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	id := e.create(sid, permission.Read, `{"prompt": "p", "in": "1m"}`)
	e.firer.fire = func(context.Context, string, schedule.Firing) (bool, error) {
		return false, fmt.Errorf("session is held elsewhere: %w", schedule.ErrDeclined)
	}
	for i := range 5 {
		if res := e.sweep(t0.Add(time.Minute + time.Duration(i)*time.Second)); res.Returned != 1 {
			t.Fatalf("sweep %d: %+v", i, res)
		}
	}
	j, _ := e.job(id)
	if j.FailedClaims != 0 || j.LeaseOwner != "" || j.Held != "" {
		t.Errorf("after five declines: %+v", j)
	}
}

func TestCancelDuringGateWins(t *testing.T) {
	for _, verdict := range []string{"fires", "declines", "hands back"} {
		t.Run(verdict, func(t *testing.T) {
			e := newEnv(t, nil)
			sid := e.session(permission.Read)
			entered, release := make(chan struct{}), make(chan struct{})
			probe := &fakeTool{name: "probe"}
			out := "a"
			if verdict == "declines" {
				out = "" // matches nothing below
			}
			probe.set(func(context.Context, tool.Call) (tool.Result, error) {
				close(entered)
				<-release
				return tool.Text(out), nil
			})
			e.firer.addTool(probe, permission.Read)
			if verdict == "hands back" {
				e.firer.fire = func(context.Context, string, schedule.Firing) (bool, error) {
					return false, schedule.ErrDeclined
				}
			}
			id := e.create(sid, permission.Read, `{"prompt": "p", "every": "1m", "gate": {"check": {"tool": "probe"}, "when": {"matches": "a"}}}`)
			done := make(chan schedule.SweepResult)
			go func() {
				res, err := e.sched.Sweep(context.Background(), t0.Add(time.Minute))
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			<-entered
			if res := e.call(schedule.CancelToolName, sid, permission.Read, fmt.Sprintf(`{"id": %q}`, id)); res.IsError {
				t.Fatalf("cancel: %s", text(res))
			}
			close(release)
			res := <-done
			if res.Fired != 0 || len(e.firer.take()) != 0 {
				t.Errorf("a canceled job fired: %+v", res)
			}
			if _, ok := e.job(id); ok {
				t.Error("the canceled job came back")
			}
		})
	}
}

// Run sweeps at once and then every PollInterval. In a synctest bubble
// the ticker runs on the fake clock, so a Run that stops sweeping fails
// after a minute of fake time instead of hanging the test binary.
func TestRunSweepsEveryPollInterval(t *testing.T) {
	t.Run("set", func(t *testing.T) { runSweeps(t, time.Second, time.Second) })
	t.Run("default", func(t *testing.T) { runSweeps(t, 0, schedule.DefaultPollInterval) })
}

// runSweeps runs a scheduler with PollInterval set to set and checks that
// its sweeps come poll apart.
func runSweeps(t *testing.T, set, poll time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *schedule.Options) { o.PollInterval = set; o.Now = time.Now })
		sid := e.session(permission.Read)
		start := time.Now()
		e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindEvery, Spec: "1s", Interval: time.Second, NextAt: start})
		fired := make(chan time.Time, 10)
		e.firer.fire = func(context.Context, string, schedule.Firing) (bool, error) {
			select {
			case fired <- time.Now():
			default:
			}
			return true, nil
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.sched.Run(ctx) }()
		for i := range 3 {
			select {
			case at := <-fired:
				if want := start.Add(time.Duration(i) * poll); !at.Equal(want) {
					t.Errorf("sweep %d fired at %v, want %v", i+1, at.Sub(start), want.Sub(start))
				}
			case <-time.After(time.Minute):
				t.Fatalf("no turn fired for a minute after %d", i)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// The sweep order is what the store says: most overdue first.
func TestDueOrder(t *testing.T) {
	e := newEnv(t, nil)
	sid := e.session(permission.Read)
	var want []string
	for _, d := range []time.Duration{3, 1, 2} {
		j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0.Add(-d * time.Minute)})
		want = append(want, fmt.Sprintf("%d:%s", d, j.ID))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(want)))
	due, err := e.store.Due(t.Context(), t0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range due {
		if !strings.HasSuffix(want[i], j.ID) {
			t.Errorf("due[%d] = %s, want %s", i, j.ID, want[i])
		}
	}
}
