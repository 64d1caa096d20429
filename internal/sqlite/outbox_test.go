package sqlite_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
)

// TestClosedOutbox checks that the webhook outbox refuses a closed DB with
// ErrClosed, as the DB's other stores do, rather than with database/sql's
// own error.
func TestClosedOutbox(t *testing.T) {
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	now := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	o := db.Outbox()
	_, fill := o.Fill(ctx, "ops", []string{"*"}, now, 10)
	_, claim := o.Claim(ctx, "h", now, time.Minute, 10)
	_, settle := o.Settle(ctx, 1, "h", "delivered", 1, now, "")
	disable := o.Disable(ctx, "ops")
	for name, err := range map[string]error{"Fill": fill, "Claim": claim, "Settle": settle, "Disable": disable} {
		if !errors.Is(err, sqlite.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
