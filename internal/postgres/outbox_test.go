package postgres_test

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
)

// TestOutbox fills the webhook outbox from the feed, claims it from two
// hosts at once (each delivery goes to one), settles, and disables.
func TestOutbox(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	a, b := open(t, url, postgres.Options{}), open(t, url, postgres.Options{})
	now := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	event := func(typ string) {
		t.Helper()
		if _, err := a.Feed().Append(ctx, []postgres.FeedEntry{{Type: typ, Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	event("old")
	if n, err := a.Outbox().Fill(ctx, "ops", []string{"*"}, now, 100); err != nil || n != 0 {
		t.Fatalf("first fill: %d %v, want nothing: a new endpoint is owed what comes next", n, err)
	}
	for range 10 {
		event("message.created")
		event("notice")
	}
	if n, err := b.Outbox().Fill(ctx, "ops", []string{"notice"}, now, 100); err != nil || n != 10 {
		t.Fatalf("fill: %d %v, want the 10 notices", n, err)
	}
	if n, err := a.Outbox().Fill(ctx, "ops", []string{"notice"}, now, 100); err != nil || n != 0 {
		t.Fatalf("second fill: %d %v, want nothing twice", n, err)
	}

	var mu sync.Mutex
	got := map[int64]string{}
	var wg sync.WaitGroup
	for owner, db := range map[string]*postgres.DB{"a": a, "b": b} {
		wg.Go(func() {
			ds, err := db.Outbox().Claim(ctx, owner, now, time.Minute, 100)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, d := range ds {
				if prev, dup := got[d.ID]; dup {
					t.Errorf("delivery %d claimed by %s and %s", d.ID, prev, owner)
				}
				if d.Event.Type != "notice" {
					t.Errorf("delivery of a %s event", d.Event.Type)
				}
				got[d.ID] = owner
			}
		})
	}
	wg.Wait()
	if len(got) != 10 {
		t.Fatalf("%d deliveries claimed, want 10", len(got))
	}
	for id, owner := range got {
		other := map[string]string{"a": "b", "b": "a"}[owner]
		if ok, _ := a.Outbox().Settle(ctx, id, other, "delivered", 1, now, ""); ok {
			t.Errorf("settled %d as the host that does not hold it", id)
		}
		if ok, err := a.Outbox().Settle(ctx, id, owner, "delivered", 1, now, ""); !ok || err != nil {
			t.Errorf("settle %d: %v %v", id, ok, err)
		}
	}
	if ds, _ := a.Outbox().Claim(ctx, "a", now.Add(time.Hour), time.Minute, 100); len(ds) != 0 {
		t.Errorf("delivered deliveries claimed again: %+v", ds)
	}
	event("notice")
	if err := a.Outbox().Disable(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Outbox().Fill(ctx, "ops", []string{"notice"}, now, 100); err != nil || n != 0 {
		t.Errorf("fill of a disabled endpoint: %d %v", n, err)
	}
}

// TestClosedOutboxAndImports checks that the outbox and the imports of
// projects and memories refuse a closed DB with ErrClosed, as its other
// stores do, rather than with the pool's own error.
func TestClosedOutboxAndImports(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	db.Close()
	now := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	o := db.Outbox()
	_, fill := o.Fill(ctx, "ops", []string{"*"}, now, 10)
	_, claim := o.Claim(ctx, "h", now, time.Minute, 10)
	_, settle := o.Settle(ctx, 1, "h", "delivered", 1, now, "")
	disable := o.Disable(ctx, "ops")
	_, project := db.ImportProject(ctx, postgres.Project{Name: "p", Dir: "/p", CreatedAt: now})
	_, memory := db.ImportMemory(ctx, postgres.Memory{ID: "m1", Text: "t", CreatedAt: now, UpdatedAt: now})
	for name, err := range map[string]error{"Fill": fill, "Claim": claim, "Settle": settle, "Disable": disable, "ImportProject": project, "ImportMemory": memory} {
		if !errors.Is(err, postgres.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
