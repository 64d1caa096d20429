package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
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

// Closing keeps the WAL file, checkpointed: the next process's first
// write reuses it instead of creating it (and syncing the directory) on
// the path of its first session.
func TestWALFileKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meka.db")
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
		if _, err := os.Stat(path + "-wal"); err != nil {
			t.Fatalf("close %d: %v", i, err)
		}
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
