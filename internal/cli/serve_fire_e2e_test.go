package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

// nextFrame waits for the feed's next durable frame of type typ.
func nextFrame(t *testing.T, feed <-chan feedFrame, typ string) feedFrame {
	t.Helper()
	for f := range feed {
		if f.typ == typ {
			return f
		}
	}
	t.Fatalf("the feed ended before a %s event", typ)
	return feedFrame{}
}

// scheduledTurns counts the turns a job fired into a session's log.
func scheduledTurns(t *testing.T, db *sqlite.DB, id string) int {
	t.Helper()
	rows, err := db.Sessions().Rows(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if u, ok := r.Entry.(session.UserMessage); ok && u.Source == session.SourceSchedule {
			n++
		}
	}
	return n
}

// meka serve fires the job of a session a one-shot made and left (nobody
// holds it): it opens the session, runs the turn at the level the session
// records (read, below serve's workspace default, so its file_write is
// refused) and releases it after idle_timeout. A session another live
// process holds is left to its holder, and fired once that lets go.
func TestServeFiresJobsOfSessionsNobodyHolds(t *testing.T) {
	work, home := t.TempDir(), t.TempDir()
	data := filepath.Join(home, "data")
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(`[permissions]
default = "workspace"

[schedule]
poll_interval = "1s"

[serve]
idle_timeout = "1s"
idle_sweep_interval = "1s"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"MEKA_DATA_DIR=" + data, "MEKA_CONFIG=" + cfg, "OPENAI_API_KEY=k"}

	// Two one-shots at read, each leaving a job due in a second; the held
	// session's job is due first, so the sweep that fires the other has
	// seen it due.
	oneshots := scripted(t, `[
	 {"tool_calls":[{"id":"a","name":"schedule_create","arguments":{"prompt":"held reminder","in":"1s"}}]},
	 {"text":"set"},
	 {"tool_calls":[{"id":"b","name":"schedule_create","arguments":{"prompt":"free reminder","in":"1s"}}]},
	 {"text":"set"}]`)
	env := append(base[:len(base):len(base)], "OPENAI_BASE_URL="+oneshots.URL+"/v1")
	var db *sqlite.DB
	var held, free string
	for i, id := range []*string{&held, &free} {
		if out, errOut, code := run(t, work, env, "--oneshot", "--permission", "read", "remind me"); code != 0 {
			t.Fatalf("one-shot %d: code %d %q %q", i, code, out, errOut)
		}
		if db == nil {
			var err error
			if db, err = sqlite.Open(t.Context(), filepath.Join(data, "meka.db"), sqlite.Options{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
		}
		page, err := db.Sessions().List(t.Context(), session.ListOptions{})
		if err != nil || len(page.Sessions) != i+1 {
			t.Fatalf("sessions after one-shot %d: %+v %v", i, page, err)
		}
		*id = page.Sessions[0].ID // newest first
		if jobs, err := db.Schedules().List(t.Context(), *id); err != nil || len(jobs) != 1 {
			t.Fatalf("one-shot %d left jobs %+v %v", i, jobs, err)
		}
	}
	// This test process holds the first session, as a terminal would.
	lock, err := db.Sessions().Lock(t.Context(), held, session.Holder{Token: "terminal"})
	if err != nil {
		t.Fatal(err)
	}

	turns := scripted(t, `[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"fired.txt","content":"x"}}]},
	 {"text":"done"},
	 {"text":"done too"}]`)
	srv := startServe(t, work, append(base[:len(base):len(base)], "OPENAI_BASE_URL="+turns.URL+"/v1"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // bounds every wait below
	defer cancel()
	freeFeed := srv.events(t, ctx, free, "0")
	heldFeed := srv.events(t, ctx, held, "0")

	nextFrame(t, freeFeed, "turn.started")
	nextFrame(t, freeFeed, "turn.completed")
	if n := scheduledTurns(t, db, free); n != 1 {
		t.Fatalf("the free session has %d scheduled turns, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(work, "fired.txt")); err == nil {
		t.Error("the fired turn wrote a file: it ran above the session's recorded level (read)")
	}
	var rec struct {
		Permission string `json:"permission"`
	}
	if code := srv.call(t, "GET", "/v1/sessions/"+free, nil, &rec); code != 200 || rec.Permission != "read" {
		t.Errorf("the fired session: %d, permission %q", code, rec.Permission)
	}
	nextFrame(t, freeFeed, "session.released")
	// Released: this process can take the session, as a terminal would.
	l, err := db.Sessions().Lock(t.Context(), free, session.Holder{Token: "after"})
	if err != nil {
		t.Fatalf("the daemon still holds the fired session after idle_timeout: %v", err)
	}
	l.Release(t.Context())

	// The held session's job was due in the sweep that fired the other,
	// and was left alone.
	if n := scheduledTurns(t, db, held); n != 0 {
		t.Fatalf("the daemon fired %d turns into a session another process holds", n)
	}
	if jobs, err := db.Schedules().List(t.Context(), held); err != nil || len(jobs) != 1 || jobs[0].LeaseOwner != "" || jobs[0].FailedClaims != 0 {
		t.Fatalf("the held session's job was touched: %+v %v", jobs, err)
	}
	// Once its holder lets go, the daemon takes it.
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	nextFrame(t, heldFeed, "turn.completed")
	if n := scheduledTurns(t, db, held); n != 1 {
		t.Fatalf("the released session has %d scheduled turns, want 1", n)
	}
	// The free job was retired by the sweep that fired it, which ended
	// before the sweep that fired the held one began.
	if jobs, _ := db.Schedules().List(t.Context(), free); len(jobs) != 0 {
		t.Errorf("the delivered one-shot job is still stored: %+v", jobs)
	}
}
