// Package sqlstore adapts the schedule store of internal/sqlite or
// internal/postgres to the schedule.Store contract. Both stores keep the
// records of internal/storerec, which match schedule's Job, Claim and
// Advance field for field; the conversions here fail to compile the day
// they drift. internal/schedule/sqlitestore and pgstore name the store.
//
// It imports internal/schedule and internal/storerec only.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/storerec"
)

// Schedules is a SQL store's schedule store: *sqlite.Schedules or
// *postgres.Schedules.
type Schedules interface {
	Create(ctx context.Context, j storerec.Job, maxJobs int) (storerec.Job, error)
	Get(ctx context.Context, idOrPrefix string) (storerec.Job, error)
	WithPrefix(ctx context.Context, prefix string, limit int) ([]storerec.Job, error)
	List(ctx context.Context, sessionID string) ([]storerec.Job, error)
	Due(ctx context.Context, now time.Time, limit int) ([]storerec.Job, error)
	Claim(ctx context.Context, c storerec.Claim) ([]storerec.Job, error)
	Advance(ctx context.Context, id, owner string, a storerec.Advance) (bool, error)
	Renew(ctx context.Context, id, owner string, until time.Time) (bool, error)
	Release(ctx context.Context, id, owner string) (bool, error)
	Retire(ctx context.Context, id, owner string) (bool, error)
	Delete(ctx context.Context, id string) (bool, error)
}

// New adapts s to schedule.Store.
func New(s Schedules) schedule.Store { return store{s} }

type store struct{ s Schedules }

func mapErr(err error) error {
	switch {
	case errors.Is(err, storerec.ErrJobNotFound):
		return fmt.Errorf("%w: %w", schedule.ErrNotFound, err)
	case errors.Is(err, storerec.ErrJobAmbiguous):
		return fmt.Errorf("%w: %w", schedule.ErrAmbiguous, err)
	case errors.Is(err, storerec.ErrTooManyJobs):
		return fmt.Errorf("%w: %w", schedule.ErrTooManyJobs, err)
	}
	return err
}

func jobs(in []storerec.Job) []schedule.Job {
	out := make([]schedule.Job, len(in))
	for i, j := range in {
		out[i] = schedule.Job(j)
	}
	return out
}

func (a store) Create(ctx context.Context, j schedule.Job, maxJobs int) (schedule.Job, error) {
	r, err := a.s.Create(ctx, storerec.Job(j), maxJobs)
	return schedule.Job(r), mapErr(err)
}

func (a store) Get(ctx context.Context, id string) (schedule.Job, error) {
	r, err := a.s.Get(ctx, id)
	return schedule.Job(r), mapErr(err)
}

func (a store) WithPrefix(ctx context.Context, p string, n int) ([]schedule.Job, error) {
	r, err := a.s.WithPrefix(ctx, p, n)
	return jobs(r), err
}

func (a store) List(ctx context.Context, sessionID string) ([]schedule.Job, error) {
	r, err := a.s.List(ctx, sessionID)
	return jobs(r), err
}

func (a store) Due(ctx context.Context, now time.Time, n int) ([]schedule.Job, error) {
	r, err := a.s.Due(ctx, now, n)
	return jobs(r), err
}

func (a store) Claim(ctx context.Context, c schedule.Claim) ([]schedule.Job, error) {
	r, err := a.s.Claim(ctx, storerec.Claim(c))
	return jobs(r), err
}

func (a store) Advance(ctx context.Context, id, owner string, adv schedule.Advance) (bool, error) {
	return a.s.Advance(ctx, id, owner, storerec.Advance(adv))
}

func (a store) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	return a.s.Renew(ctx, id, owner, until)
}

func (a store) Release(ctx context.Context, id, owner string) (bool, error) {
	return a.s.Release(ctx, id, owner)
}

func (a store) Retire(ctx context.Context, id, owner string) (bool, error) {
	return a.s.Retire(ctx, id, owner)
}

func (a store) Delete(ctx context.Context, id string) (bool, error) { return a.s.Delete(ctx, id) }
