package agent

import (
	"context"
	"errors"
	"fmt"

	"meka.dev/meka/session"
)

// ErrNotLastTurn is returned by Withdraw for a turn that is not the last
// one of the log.
var ErrNotLastTurn = errors.New("only the last turn can be withdrawn")

// Withdraw takes the last turn back out of the session, as if it had
// never run: rewind drops its rows from the store (keeping every turn
// before it), then the engine drops them from its view and refolds. It is
// how a scheduled prompt whose turn failed before doing anything leaves
// nothing behind. It fails with ErrBusy while a turn runs, and with
// ErrNotLastTurn when another turn has followed.
func (e *Engine) Withdraw(ctx context.Context, turn int64, rewind func(ctx context.Context, keepThroughTurn int64) error) error {
	if !e.running.TryLock() {
		return ErrBusy
	}
	defer e.running.Unlock()
	e.mu.Lock()
	last := session.LastTurn(e.rows)
	e.mu.Unlock()
	if turn != last || turn <= 0 {
		return fmt.Errorf("withdraw turn %d: %w (the last is %d)", turn, ErrNotLastTurn, last)
	}
	if err := rewind(ctx, turn-1); err != nil {
		return fmt.Errorf("withdraw turn %d: %w", turn, err)
	}
	e.mu.Lock()
	keep := 0
	for keep < len(e.rows) && e.rows[keep].Turn < turn {
		keep++
	}
	e.rows = e.rows[:keep:keep]
	e.mu.Unlock()
	if err := e.refold(); err != nil {
		return fmt.Errorf("withdraw turn %d: %w", turn, err)
	}
	return nil
}
