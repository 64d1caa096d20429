package sqlite_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

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
