package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/storerec/feedtest"
)

func TestFeed(t *testing.T) {
	feedtest.Run(t, func(t *testing.T) feedtest.Opener {
		path := filepath.Join(t.TempDir(), "meka.db")
		return func(t *testing.T, now func() time.Time) feedtest.DB {
			db := open(t, path, sqlite.Options{Now: now})
			return feedtest.DB{Feed: db.Feed(), Outbox: db.Outbox(), Close: db.Close}
		}
	})
}
