package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// WatchJobs returns a channel that receives when another host creates a
// job (a NOTIFY on the jobs channel, sent in the creating transaction),
// so a scheduler sweeps at once instead of at its next poll. Wake-ups
// coalesce: the channel holds one.
//
// A goroutine holds a connection of its own LISTENing until ctx ends or
// the DB closes, which waits for it. A lost connection is reopened with
// backoff. Each time the LISTEN takes (the first time included) a
// wake-up is sent, for what was missed meanwhile.
func (db *DB) WatchJobs(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		cancel()
		return wake
	}
	db.stop = append(db.stop, func() { cancel(); <-done })
	db.mu.Unlock()
	go func() {
		defer close(done)
		db.listen(ctx, wake)
	}()
	return wake
}

func (db *DB) listen(ctx context.Context, wake chan<- struct{}) {
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, func() {
			wait = 100 * time.Millisecond
			signal()
		}, signal)
		if ctx.Err() != nil {
			return
		}
		db.log.Warn("listen for new jobs", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// listenOnce LISTENs on one connection until it fails; ready is called
// once the LISTEN took.
func (db *DB) listenOnce(ctx context.Context, ready, signal func()) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+jobsChannel); err != nil {
		return err
	}
	ready()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		signal()
	}
}
