package sqlite_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"meka.dev/meka/internal/sqlite"
)

// Unfinished finds the turns started with no end after them, whatever
// came between; TurnEvents finds one turn's start and end.
func TestFeedUnfinishedTurns(t *testing.T) {
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	turn := func(sid, typ, id string) sqlite.FeedEntry {
		return sqlite.FeedEntry{SessionID: sid, Turn: 1, Type: typ, Data: json.RawMessage(`{"turn_id":"` + id + `","source":"client"}`)}
	}
	if _, err := db.Feed().Append(ctx, []sqlite.FeedEntry{
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
	var got []string
	for _, e := range evs {
		got = append(got, e.SessionID+":"+string(e.Data))
	}
	if len(evs) != 2 || evs[0].SessionID != "b" || evs[1].SessionID != "c" || evs[0].ID >= evs[1].ID {
		t.Fatalf("unfinished %v", got)
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
// and the newest event stays however old it is.
func TestFeedRetentionAcrossRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "meka.db")
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := day0
	clock := func() time.Time { return now }
	db, err := sqlite.Open(ctx, path, sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Outbox().Fill(ctx, "hook", nil, now, 100); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for day := range 4 {
		now = day0.AddDate(0, 0, day)
		evs, err := db.Feed().Append(ctx, []sqlite.FeedEntry{{SessionID: "s", Type: "notice", Data: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, evs[0].ID)
	}
	if n, err := db.Outbox().Fill(ctx, "hook", nil, now, 100); err != nil || n != 4 {
		t.Fatalf("fill: %d %v", n, err)
	}
	db.Close()

	db = open(t, path, sqlite.Options{Now: clock})
	// Keep two days: days 0 and 1 go.
	if n, err := db.Feed().Prune(ctx, day0.AddDate(0, 0, 2)); err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	db.Close()

	db = open(t, path, sqlite.Options{Now: clock})
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
	// Everything is past retention: the newest stays, ids go on after it.
	if n, err := db.Feed().Prune(ctx, now.AddDate(1, 0, 0)); err != nil || n != 1 {
		t.Fatalf("prune all: %d %v", n, err)
	}
	if lo, hi, err := db.Feed().Bounds(ctx); err != nil || lo != ids[3] || hi != ids[3] {
		t.Fatalf("bounds after pruning all %d %d %v", lo, hi, err)
	}
	evs, err := db.Feed().Append(ctx, []sqlite.FeedEntry{{Type: "notice", Data: json.RawMessage(`{}`)}})
	if err != nil || evs[0].ID <= ids[3] {
		t.Fatalf("next id %+v %v, want past %d", evs, err, ids[3])
	}
}
