package postgres_test

import (
	"testing"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/session"
	"meka.dev/meka/session/sessiontest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// open opens the database at url with opts, closed when the test ends.
func open(t testing.TB, url string, opts postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSessionStore(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) sessiontest.Opener {
		url := pgtest.NewDatabase(t)
		return func(t *testing.T) session.Store {
			db, err := postgres.Open(t.Context(), url, postgres.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			return db.Sessions()
		}
	})
}
