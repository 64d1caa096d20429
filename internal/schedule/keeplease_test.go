package schedule_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
)

// renewSpy reports each lease renewal on a channel.
type renewSpy struct {
	schedule.Store
	renewed chan time.Time
}

func (s *renewSpy) Renew(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	ok, err := s.Store.Renew(ctx, id, owner, until)
	if ok {
		select {
		case s.renewed <- until:
		case <-ctx.Done():
		}
	}
	return ok, err
}

// TestLeaseRenewedWhileTurnRuns checks that a turn longer than the claim
// lease keeps its lease: the scheduler renews it while Fire runs, so
// another host does not take a live delivery for a dead one, and stops
// renewing when the turn ends.
func TestLeaseRenewedWhileTurnRuns(t *testing.T) {
	// In a bubble the renewal ticker runs on the fake clock, and a
	// renewal nobody takes is a deadlock that fails the test at once.
	synctest.Test(t, func(t *testing.T) {
		spy := &renewSpy{renewed: make(chan time.Time)}
		e := newEnv(t, func(o *schedule.Options) {
			spy.Store = o.Store
			o.Store = spy
			o.ClaimLease, o.GateTimeout = 30*time.Millisecond, 10*time.Millisecond
		})
		sid := e.session(permission.Read)
		j := e.insert(schedule.Job{SessionID: sid, Kind: schedule.KindOnce, NextAt: t0})
		var seen []time.Time
		e.firer.fire = func(ctx context.Context, _ string, _ schedule.Firing) (bool, error) {
			// The turn outlasts three leases; it ends once three renewals
			// came, a third of the lease apart on the bubble's clock.
			start := time.Now()
			for len(seen) < 3 {
				select {
				case u := <-spy.renewed:
					seen = append(seen, u)
					if got, want := time.Since(start), time.Duration(len(seen))*10*time.Millisecond; got != want {
						t.Errorf("renewal %d after %v, want %v", len(seen), got, want)
					}
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
			if got, ok := e.job(j.ID); !ok || got.LeaseOwner != "test-host" {
				t.Errorf("during the turn the job is %+v, want leased to this host", got)
			}
			return true, nil
		}
		if res := e.sweep(t0); res.Fired != 1 {
			t.Fatalf("sweep: %+v", res)
		}
		if _, ok := e.job(j.ID); ok {
			t.Error("the one-shot is still there after its turn")
		}
		select {
		case u := <-spy.renewed:
			t.Errorf("a renewal (until %v) after the turn ended", u)
		default:
		}
	})
}
