package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/session"
)

// TestFeedWithRows checks that the events appended rows cause are stored
// in the rows' transaction and read back in order.
func TestFeedWithRows(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{Feed: func(sid string, rows []session.Row) []postgres.FeedEntry {
		var out []postgres.FeedEntry
		for _, r := range rows {
			out = append(out, postgres.FeedEntry{SessionID: sid, Turn: r.Turn, Type: "row", Data: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, r.Seq))})
		}
		return out
	}})
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	changed := db.Feed().Changed()
	if _, err := db.Sessions().Append(ctx, m.ID, append(note("a"), note("b")...)); err != nil {
		t.Fatal(err)
	}
	<-changed
	evs, err := db.Feed().After(ctx, 0, m.ID, 10)
	if err != nil || len(evs) != 2 || string(evs[0].Data) != `{"seq":1}` || string(evs[1].Data) != `{"seq":2}` || evs[1].ID <= evs[0].ID {
		t.Fatalf("feed after an append: %+v %v", evs, err)
	}
	if lo, hi, err := db.Feed().Bounds(ctx); err != nil || lo != evs[0].ID || hi != evs[1].ID {
		t.Errorf("bounds %d %d %v", lo, hi, err)
	}
	if other, _ := db.Feed().After(ctx, 0, "0e0e0e0e-0e0e-4e0e-8e0e-0e0e0e0e0e0e", 10); len(other) != 0 {
		t.Errorf("another session's feed: %+v", other)
	}
}

// TestFeedCommitOrder has writers on several connections append at once
// while a reader pages by id: ids commit in order, so the reader, always
// asking for what lies past the last id it saw, misses none.
func TestFeedCommitOrder(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	const writers, each = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := db.Feed().Append(ctx, []postgres.FeedEntry{{Type: "x", Data: json.RawMessage(fmt.Sprintf(`"%d.%d"`, w, i))}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[string]bool{}
	var after int64
	for len(seen) < writers*each {
		changed := db.Feed().Changed()
		evs, err := db.Feed().After(ctx, after, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen[string(e.Data)] = true
			after = e.ID
		}
		if len(evs) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("read %d of %d events: the rest went by under ids already passed", len(seen), writers*each)
		}
	}
	wg.Wait()
}

// Unfinished finds the turns started with no end after them, whatever
// came between; TurnEvents finds one turn's start and end.
func TestFeedUnfinishedTurns(t *testing.T) {
	ctx := t.Context()
	db := open(t, pgtest.NewDatabase(t), postgres.Options{})
	turn := func(sid, typ, id string) postgres.FeedEntry {
		return postgres.FeedEntry{SessionID: sid, Turn: 1, Type: typ, Data: json.RawMessage(`{"turn_id":"` + id + `","source":"client"}`)}
	}
	if _, err := db.Feed().Append(ctx, []postgres.FeedEntry{
		turn("a", "turn.started", "a1"), turn("a", "turn.completed", "a1"),
		turn("b", "turn.started", "b1"), // cut by a crash
		turn("b", "turn.started", "b2"), {SessionID: "b", Type: "notice", Data: json.RawMessage(`{}`)}, turn("b", "turn.completed", "b2"),
		turn("c", "turn.started", "c1"),   // cut, its session's last
		turn("d", "turn.completed", "c1"), // another session's end
	}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Feed().Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].SessionID != "b" || evs[1].SessionID != "c" || evs[0].ID >= evs[1].ID {
		t.Fatalf("unfinished %+v", evs)
	}
	one, err := db.Feed().TurnEvents(ctx, "b", "b2")
	if err != nil || len(one) != 2 || one[0].Type != "turn.started" || one[1].Type != "turn.completed" {
		t.Fatalf("turn b2: %+v %v", one, err)
	}
	if none, err := db.Feed().TurnEvents(ctx, "a", "b2"); err != nil || len(none) != 0 {
		t.Fatalf("another session's turn: %+v %v", none, err)
	}
}

// Prune deletes a prefix of the feed older than the retention, with its
// webhook deliveries, and what it leaves survives a restart: the oldest
// kept id is the feed's lower bound, new ids continue past the newest,
// and the newest event stays however old it is (as in SQLite).
func TestFeedRetentionAcrossRestart(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := day0
	clock := func() time.Time { return now }
	db, err := postgres.Open(ctx, url, postgres.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().Fill(ctx, "hook", nil, now, 100); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for day := range 4 {
		now = day0.AddDate(0, 0, day)
		evs, err := db.Feed().Append(ctx, []postgres.FeedEntry{{SessionID: "s", Type: "notice", Data: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, evs[0].ID)
	}
	if n, err := db.Outbox().Fill(ctx, "hook", nil, now, 100); err != nil || n != 4 {
		t.Fatalf("fill: %d %v", n, err)
	}
	db.Close()

	db = open(t, url, postgres.Options{Now: clock})
	if n, err := db.Feed().Prune(ctx, day0.AddDate(0, 0, 2)); err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	db.Close()

	db = open(t, url, postgres.Options{Now: clock})
	if lo, hi, err := db.Feed().Bounds(ctx); err != nil || lo != ids[2] || hi != ids[3] {
		t.Fatalf("bounds after a restart %d %d %v, want %d %d", lo, hi, err, ids[2], ids[3])
	}
	if evs, err := db.Feed().After(ctx, 0, "", 10); err != nil || len(evs) != 2 || evs[0].ID != ids[2] {
		t.Fatalf("after 0: %+v %v", evs, err)
	}
	ds, err := db.Outbox().Claim(ctx, "me", now, time.Minute, 10)
	if err != nil || len(ds) != 2 || ds[0].Event.ID != ids[2] || ds[1].Event.ID != ids[3] {
		t.Fatalf("deliveries left: %+v %v", ds, err)
	}
	if n, err := db.Feed().Prune(ctx, now.AddDate(1, 0, 0)); err != nil || n != 1 {
		t.Fatalf("prune all: %d %v", n, err)
	}
	if lo, hi, err := db.Feed().Bounds(ctx); err != nil || lo != ids[3] || hi != ids[3] {
		t.Fatalf("bounds after pruning all %d %d %v", lo, hi, err)
	}
	evs, err := db.Feed().Append(ctx, []postgres.FeedEntry{{Type: "notice", Data: json.RawMessage(`{}`)}})
	if err != nil || evs[0].ID <= ids[3] {
		t.Fatalf("next id %+v %v, want past %d", evs, err, ids[3])
	}
}
