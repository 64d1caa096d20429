package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/schedule/scheduletest"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/session"
)

func TestStore(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Harness {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{Now: func() time.Time { return scheduletest.St0 }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return scheduletest.Harness{
			Store: sqlitestore.New(db.Schedules()),
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
	})
}
