// Package pgstore adapts internal/postgres's schedule store to the
// schedule.Store contract (see internal/schedule/sqlstore). The
// composition root and the scheduler's tests both use it.
package pgstore

import (
	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlstore"
)

// New adapts s to schedule.Store.
func New(s *postgres.Schedules) schedule.Store { return sqlstore.New(s) }
