// Package pgstore adapts internal/postgres's schedule store to the
// schedule.Store contract. The two packages sit apart in the layering, so
// neither names the other's types; their Job, Claim and Advance match
// field for field, and the conversions here fail to compile the day they
// drift. The composition root and the scheduler's tests both use it.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/schedule"
)

// New adapts s to schedule.Store.
func New(s *postgres.Schedules) schedule.Store { return store{s} }

type store struct{ s *postgres.Schedules }

func mapErr(err error) error {
	switch {
	case errors.Is(err, postgres.ErrJobNotFound):
		return fmt.Errorf("%w: %w", schedule.ErrNotFound, err)
	case errors.Is(err, postgres.ErrJobAmbiguous):
		return fmt.Errorf("%w: %w", schedule.ErrAmbiguous, err)
	case errors.Is(err, postgres.ErrTooManyJobs):
		return fmt.Errorf("%w: %w", schedule.ErrTooManyJobs, err)
	}
	return err
}

func jobs(in []postgres.Job) []schedule.Job {
	out := make([]schedule.Job, len(in))
	for i, j := range in {
		out[i] = schedule.Job(j)
	}
	return out
}

func (a store) Create(ctx context.Context, j schedule.Job, maxJobs int) (schedule.Job, error) {
	r, err := a.s.Create(ctx, postgres.Job(j), maxJobs)
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
	r, err := a.s.Claim(ctx, postgres.Claim(c))
	return jobs(r), err
}

func (a store) Advance(ctx context.Context, id, owner string, adv schedule.Advance) (bool, error) {
	return a.s.Advance(ctx, id, owner, postgres.Advance(adv))
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
