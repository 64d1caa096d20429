// Package feedtest is the conformance suite of the event feed and webhook
// outbox that internal/sqlite and internal/postgres both keep: one set of
// tests, so the two stores cannot drift apart in what a restarted
// meka serve finds.
package feedtest

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"meka.dev/meka/internal/storerec"
)

// Feed is the part of a store's feed the suite drives.
type Feed interface {
	Append(ctx context.Context, entries []storerec.FeedEntry) ([]storerec.FeedEvent, error)
	After(ctx context.Context, after int64, sessionID string, limit int) ([]storerec.FeedEvent, error)
	Before(ctx context.Context, before int64, sessionID string, limit int) ([]storerec.FeedEvent, error)
	Unfinished(ctx context.Context) ([]storerec.FeedEvent, error)
	TurnEvents(ctx context.Context, sessionID, turnID string) ([]storerec.FeedEvent, error)
	Bounds(ctx context.Context) (oldest, newest int64, err error)
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// Outbox is the part of a store's webhook outbox the suite drives.
type Outbox interface {
	Fill(ctx context.Context, endpoint string, types []string, now time.Time, limit int) (int, error)
	Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]storerec.Delivery, error)
}

// DB is one open database.
type DB struct {
	Feed   Feed
	Outbox Outbox
	Close  func() error
}

// Opener opens the same database each time it is called, with now as its
// clock, failing t when it cannot.
type Opener func(t *testing.T, now func() time.Time) DB

// Run runs the suite; newOpener gives each test a database of its own.
func Run(t *testing.T, newOpener func(t *testing.T) Opener) {
	t.Run("UnfinishedTurns", func(t *testing.T) { unfinishedTurns(t, newOpener(t)) })
	t.Run("PagesBackFromTheEnd", func(t *testing.T) { pagesBackFromTheEnd(t, newOpener(t)) })
	t.Run("RetentionAcrossRestart", func(t *testing.T) { retentionAcrossRestart(t, newOpener(t)) })
}

// Unfinished finds the turns started with no end after them, whatever
// came between; TurnEvents finds one turn's start and end.
func unfinishedTurns(t *testing.T, open Opener) {
	ctx := t.Context()
	db := open(t, time.Now)
	turn := func(sid, typ, id string) storerec.FeedEntry {
		return storerec.FeedEntry{SessionID: sid, Turn: 1, Type: typ, Data: json.RawMessage(`{"turn_id":"` + id + `","source":"client"}`)}
	}
	if _, err := db.Feed.Append(ctx, []storerec.FeedEntry{
		turn("a", "turn.started", "a1"), turn("a", "turn.completed", "a1"),
		turn("b", "turn.started", "b1"), // cut by a crash
		turn("b", "turn.started", "b2"), {SessionID: "b", Type: "notice", Data: json.RawMessage(`{}`)}, turn("b", "turn.completed", "b2"),
		turn("c", "turn.started", "c1"),   // cut, its session's last
		turn("d", "turn.completed", "c1"), // another session's end
	}); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Feed.Unfinished(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].SessionID != "b" || evs[1].SessionID != "c" || evs[0].ID >= evs[1].ID {
		t.Fatalf("unfinished %+v", evs)
	}
	one, err := db.Feed.TurnEvents(ctx, "b", "b2")
	if err != nil || len(one) != 2 || one[0].Type != "turn.started" || one[1].Type != "turn.completed" {
		t.Fatalf("turn b2: %+v %v", one, err)
	}
	if none, err := db.Feed.TurnEvents(ctx, "a", "b2"); err != nil || len(none) != 0 {
		t.Fatalf("another session's turn: %+v %v", none, err)
	}
}

// Before pages a session's events back from past the newest: each page
// is the newest below its cursor, oldest first, and the pages together
// are what After reads forwards, with no gap or repeat; the cursor is a
// position, so one below the oldest or past the newest is no error.
func pagesBackFromTheEnd(t *testing.T, open Opener) {
	ctx := t.Context()
	db := open(t, time.Now)
	var entries []storerec.FeedEntry
	for i := range 11 {
		entries = append(entries, storerec.FeedEntry{SessionID: "a", Type: "notice", Data: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)})
		if i%3 == 0 {
			entries = append(entries, storerec.FeedEntry{SessionID: "b", Type: "notice", Data: json.RawMessage(`{}`)})
		}
	}
	stored, err := db.Feed.Append(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	forward, err := db.Feed.After(ctx, 0, "a", 100)
	if err != nil || len(forward) != 11 {
		t.Fatalf("after: %d %v", len(forward), err)
	}
	_, newest, err := db.Feed.Bounds(ctx)
	if err != nil || newest != stored[len(stored)-1].ID {
		t.Fatalf("bounds: %d %v", newest, err)
	}
	var back []storerec.FeedEvent
	for cursor := newest + 1; ; {
		page, err := db.Feed.Before(ctx, cursor, "a", 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 4 || page[len(page)-1].ID >= cursor {
			t.Fatalf("page before %d: %+v", cursor, page)
		}
		for i := 1; i < len(page); i++ {
			if page[i-1].ID >= page[i].ID {
				t.Fatalf("page not oldest first: %+v", page)
			}
		}
		back = append(page, back...)
		cursor = page[0].ID
	}
	if len(back) != len(forward) {
		t.Fatalf("paged back %d events, forward %d", len(back), len(forward))
	}
	for i := range back {
		if back[i].ID != forward[i].ID || back[i].SessionID != "a" || string(back[i].Data) != string(forward[i].Data) {
			t.Fatalf("event %d: back %+v, forward %+v", i, back[i], forward[i])
		}
	}
	// The tail of the whole feed, every session's.
	if all, err := db.Feed.Before(ctx, newest+100, "", 2); err != nil || len(all) != 2 || all[1].ID != newest || all[0].ID != stored[len(stored)-2].ID {
		t.Fatalf("tail of the feed: %+v %v", all, err)
	}
	if none, err := db.Feed.Before(ctx, stored[0].ID, "", 10); err != nil || len(none) != 0 {
		t.Fatalf("before the oldest: %+v %v", none, err)
	}
}

// Prune deletes a prefix of the feed older than the retention, with its
// webhook deliveries, and what it leaves survives a restart: the oldest
// kept id is the feed's lower bound, new ids continue past the newest,
// and the newest event stays however old it is.
func retentionAcrossRestart(t *testing.T, open Opener) {
	ctx := t.Context()
	day0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := day0
	clock := func() time.Time { return now }
	db := open(t, clock)
	if _, err := db.Outbox.Fill(ctx, "hook", nil, now, 100); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for day := range 4 {
		now = day0.AddDate(0, 0, day)
		evs, err := db.Feed.Append(ctx, []storerec.FeedEntry{{SessionID: "s", Type: "notice", Data: json.RawMessage(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, evs[0].ID)
	}
	if n, err := db.Outbox.Fill(ctx, "hook", nil, now, 100); err != nil || n != 4 {
		t.Fatalf("fill: %d %v", n, err)
	}
	db.Close()

	db = open(t, clock)
	// Keep two days: days 0 and 1 go.
	if n, err := db.Feed.Prune(ctx, day0.AddDate(0, 0, 2)); err != nil || n != 2 {
		t.Fatalf("prune: %d %v", n, err)
	}
	db.Close()

	db = open(t, clock)
	if lo, hi, err := db.Feed.Bounds(ctx); err != nil || lo != ids[2] || hi != ids[3] {
		t.Fatalf("bounds after a restart %d %d %v, want %d %d", lo, hi, err, ids[2], ids[3])
	}
	if evs, err := db.Feed.After(ctx, 0, "", 10); err != nil || len(evs) != 2 || evs[0].ID != ids[2] {
		t.Fatalf("after 0: %+v %v", evs, err)
	}
	ds, err := db.Outbox.Claim(ctx, "me", now, time.Minute, 10)
	if err != nil || len(ds) != 2 || ds[0].Event.ID != ids[2] || ds[1].Event.ID != ids[3] {
		t.Fatalf("deliveries left: %+v %v", ds, err)
	}
	// Everything is past retention: the newest stays, ids go on after it.
	if n, err := db.Feed.Prune(ctx, now.AddDate(1, 0, 0)); err != nil || n != 1 {
		t.Fatalf("prune all: %d %v", n, err)
	}
	if lo, hi, err := db.Feed.Bounds(ctx); err != nil || lo != ids[3] || hi != ids[3] {
		t.Fatalf("bounds after pruning all %d %d %v", lo, hi, err)
	}
	evs, err := db.Feed.Append(ctx, []storerec.FeedEntry{{Type: "notice", Data: json.RawMessage(`{}`)}})
	if err != nil || evs[0].ID <= ids[3] {
		t.Fatalf("next id %+v %v, want past %d", evs, err, ids[3])
	}
}
