package host

import "context"

// Withdraw takes the session's last turn back out of its log: the rows
// are rewound in the store and dropped from the engine. The scheduler
// uses it for a recurring job's prompt whose turn failed before any tool
// ran, since the job produces that prompt again. It fails with
// agent.ErrBusy while a turn runs and agent.ErrNotLastTurn once another
// turn has followed.
func (s *Session) Withdraw(ctx context.Context, turn int64) error {
	return s.engine.Withdraw(ctx, turn, func(ctx context.Context, keep int64) error {
		if s.checkpoints != nil {
			s.checkpoints.reset()
		}
		return s.h.opts.Store.Rewind(ctx, s.id, keep)
	})
}
