package pgstore_test

import (
	"os"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/internal/schedule/pgstore"
	"meka.dev/meka/internal/schedule/scheduletest"
	"meka.dev/meka/session"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRole) != "" {
		os.Exit(runHost())
	}
	pgtest.Main(m)
}

func TestStore(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Harness {
		db, err := postgres.Open(t.Context(), pgtest.NewDatabase(t), postgres.Options{Now: func() time.Time { return scheduletest.St0 }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return harness(db)
	})
}

func harness(db *postgres.DB) scheduletest.Harness {
	return scheduletest.Harness{
		Store: pgstore.New(db.Schedules()),
		NewSession: func(t *testing.T) string {
			m, err := db.Sessions().Create(t.Context(), session.Meta{Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			return m.ID
		},
		DeleteSession: func(t *testing.T, id string) {
			if err := db.Sessions().Delete(t.Context(), id); err != nil {
				t.Fatal(err)
			}
		},
	}
}
