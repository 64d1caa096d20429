package sqlite_test

import (
	"path/filepath"
	"testing"

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
