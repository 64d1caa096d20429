package sqlite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/session/sessiontest"
)

// open opens the database at path with opts, closed when the test ends.
func open(t testing.TB, path string, opts sqlite.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSessionStore(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) sessiontest.Opener {
		path := filepath.Join(t.TempDir(), "meka.db")
		return func(t *testing.T) session.Store {
			db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return db.Sessions()
		}
	})
}

// Closing keeps the WAL file and what it holds, not checkpointed (no
// fsync at exit): the next process's first write appends to it instead of
// restarting it (and syncing its header and the directory) on the path of
// its first session, and the next opener reads the commits from it.
func TestWALFileKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	var walSize int64
	for i := range 2 {
		db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
		// Each process's commits are appended to the last one's.
		if fi.Size() <= walSize {
			t.Fatalf("close %d: WAL of %d bytes after %d: checkpointed at close", i, fi.Size(), walSize)
		}
		walSize = fi.Size()
	}
	db := open(t, path, sqlite.Options{})
	if list, err := db.Sessions().List(t.Context(), session.ListOptions{}); err != nil || len(list.Sessions) != 2 {
		t.Fatalf("sessions after reopening: %d %v", len(list.Sessions), err)
	}
}

// The reader's statements are prepared in the background after Open
// returns: a Close at once waits for them, and a read right after Open
// waits for them rather than failing.
func TestReadsRightAfterOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	for range 20 {
		db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db := open(t, path, sqlite.Options{})
	m, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := db.Sessions().Get(t.Context(), m.ID); err != nil || got.ID != m.ID {
			t.Fatalf("Get right after Open = %v, %v", got.ID, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoginsKeepHashesAndPruneExpired(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	l := db.Logins()
	ctx := t.Context()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	live, gone := []byte("live-hash"), []byte("gone-hash")
	if err := l.SaveLogin(ctx, live, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveLogin(ctx, gone, now); err != nil {
		t.Fatal(err)
	}
	if exp, ok, err := l.LoginExpiry(ctx, live); err != nil || !ok || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("expiry: %v %v %v", exp, ok, err)
	}
	if n, err := l.PruneLogins(ctx, now); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if _, ok, _ := l.LoginExpiry(ctx, gone); ok {
		t.Fatal("an expired login outlived the prune")
	}
	if err := l.DeleteLogin(ctx, live); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := l.LoginExpiry(ctx, live); ok {
		t.Fatal("a deleted login is still there")
	}
}

// A WAL grown past a megabyte is checkpointed and truncated at close, so
// that the next opener does not read it all to rebuild its index; what it
// held is in the database file.
func TestWALTrimmedAtClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
	db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 64<<10)
	for i := range 24 {
		row := session.Row{Turn: int64(i + 1), Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: big}}}}
		if _, err := db.Sessions().Append(t.Context(), m.ID, []session.Row{row}); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() <= 1<<20 {
		t.Fatalf("WAL before close: %v %v", fi.Size(), err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("WAL after close: %d bytes, %v", fi.Size(), err)
	}
	db = open(t, path, sqlite.Options{})
	rows, err := db.Sessions().Rows(t.Context(), m.ID, 0)
	if err != nil || len(rows) != 24 {
		t.Fatalf("rows after reopening: %d %v", len(rows), err)
	}
}
