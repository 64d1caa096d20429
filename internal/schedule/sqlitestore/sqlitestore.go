// Package sqlitestore adapts internal/sqlite's schedule store to the
// schedule.Store contract (see internal/schedule/sqlstore). The
// composition root and the scheduler's tests both use it.
package sqlitestore

import (
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlstore"
	"meka.dev/meka/internal/sqlite"
)

// New adapts s to schedule.Store.
func New(s *sqlite.Schedules) schedule.Store { return sqlstore.New(s) }
