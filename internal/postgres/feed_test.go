package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/internal/storerec/feedtest"
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

func TestFeed(t *testing.T) {
	feedtest.Run(t, func(t *testing.T) feedtest.Opener {
		url := pgtest.NewDatabase(t)
		return func(t *testing.T, now func() time.Time) feedtest.DB {
			db := open(t, url, postgres.Options{Now: now})
			return feedtest.DB{Feed: db.Feed(), Outbox: db.Outbox(), Close: db.Close}
		}
	})
}
