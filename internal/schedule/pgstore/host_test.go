package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/pgstore"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// The multi-host test runs this test binary again, in another network
// namespace under another host name, as a "host": a process with its own
// connection pool on the shared database, taking session locks and
// running a scheduler as meka serve does. It reads commands on stdin and
// writes what happened on stdout, one line each:
//
//	lock SID            → locked SID | error MSG
//	lockwait SID        → locked SID (retrying while another host holds it)
//	append SID TEXT     → appended SID | error MSG
//	sched deliver|hang  → fired JOB SID | firing JOB SID (then hangs)
const (
	envRole = "MEKA_TEST_HOST_ROLE"
	envURL  = "MEKA_TEST_HOST_URL"
)

// hostLease is the session lock lease and job claim lease of a host.
const hostLease = 2 * time.Second

func runHost() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out := make(chan string, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for line := range out {
			fmt.Println(line)
		}
	}()
	defer func() { close(out); <-done }()
	say := func(format string, args ...any) { out <- fmt.Sprintf(format, args...) }

	db, err := postgres.Open(ctx, os.Getenv(envURL), postgres.Options{LockLease: hostLease})
	if err != nil {
		say("error %v", err)
		return 1
	}
	defer db.Close()
	name, _ := os.Hostname()
	say("ready %s %d", name, os.Getpid())

	// The end of stdin ends the host: its schedulers stop and finish
	// what they were doing.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	locks := map[string]session.Lock{}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.SplitN(in.Text(), " ", 3)
		switch f[0] {
		case "lock", "lockwait":
			for attempt := 0; ; attempt++ {
				l, err := db.Sessions().Lock(ctx, f[1], session.Holder{})
				if err == nil {
					locks[f[1]] = l
					say("locked %s", f[1])
					break
				}
				if f[0] == "lock" || !errors.Is(err, session.ErrHeld) || attempt > 300 {
					say("error %v", err)
					break
				}
				time.Sleep(100 * time.Millisecond) // the other host's lease runs on the server's clock
			}
		case "append":
			_, err := db.Sessions().Append(ctx, f[1], []session.Row{{Turn: 1, Entry: session.Notice{Title: f[2]}}})
			if err != nil {
				say("error %v", err)
			} else {
				say("appended %s", f[1])
			}
		case "sched":
			wg.Go(func() { runScheduler(ctx, db, f[1] == "hang", say) })
		}
	}
	return 0
}

func runScheduler(ctx context.Context, db *postgres.DB, hang bool, say func(string, ...any)) {
	s, err := schedule.New(schedule.Options{
		Store:        pgstore.New(db.Schedules()),
		Firer:        &firer{db: db, hang: hang, say: say},
		PollInterval: 200 * time.Millisecond,
		ClaimLease:   hostLease,
		GateTimeout:  time.Second,
		Now:          db.Now,
		Wake:         db.WatchJobs,
	})
	if err != nil {
		say("error %v", err)
		return
	}
	s.Run(ctx)
}

// firer delivers a job's turn as a host does: it takes the session's
// lock (declining while another host holds it), appends the message and
// lets go. A hanging firer stops mid-delivery, lock held, to be killed.
type firer struct {
	db   *postgres.DB
	hang bool
	say  func(string, ...any)
}

func (f *firer) Holds(context.Context, string) bool { return true }
func (f *firer) Level(string) (permission.Level, bool) {
	return permission.Unrestricted, true
}
func (f *firer) Tool(string, string) (tool.Tool, permission.Level, bool) { return nil, 0, false }

func (f *firer) Fire(ctx context.Context, sessionID string, fr schedule.Firing) (bool, error) {
	l, err := f.db.Sessions().Lock(ctx, sessionID, session.Holder{})
	if err != nil {
		return false, fmt.Errorf("%w: %w", schedule.ErrDeclined, err)
	}
	defer l.Release(context.WithoutCancel(ctx))
	if f.hang {
		f.say("firing %s %s", fr.JobID, sessionID)
		<-ctx.Done()
		return false, ctx.Err()
	}
	if _, err := f.db.Sessions().Append(ctx, sessionID, []session.Row{{Turn: 1, Entry: fr.Message}}); err != nil {
		return false, err
	}
	f.say("fired %s %s", fr.JobID, sessionID)
	return true, nil
}
