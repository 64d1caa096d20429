package postgres_test

import (
	"errors"
	"testing"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// TestServerGoesAway cuts every connection to the server while a session
// is held and written: the next append fails saying the server is
// unreachable, nothing committed is lost, and once the server is back the
// same handle reconnects, its lock still good, and writes on.
func TestServerGoesAway(t *testing.T) {
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	db := open(t, url, postgres.Options{})
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := db.Sessions().Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	before, err := db.Sessions().Append(ctx, m.ID, note("committed"))
	if err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	_, err = db.Sessions().Append(ctx, m.ID, note("lost"))
	if !errors.Is(err, postgres.ErrUnreachable) {
		t.Fatalf("append with the server gone: %v, want ErrUnreachable", err)
	}
	if _, err := db.Sessions().Rows(ctx, m.ID, 0); !errors.Is(err, postgres.ErrUnreachable) {
		t.Errorf("read with the server gone: %v, want ErrUnreachable", err)
	}

	proxy.Restore()
	after, err := db.Sessions().Append(ctx, m.ID, note("after"))
	if err != nil {
		t.Fatalf("append once the server is back: %v", err)
	}
	if after[0].Seq != before[0].Seq+1 {
		t.Errorf("seq %d after %d, want the next", after[0].Seq, before[0].Seq)
	}
	rows, err := db.Sessions().Rows(ctx, m.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || text(rows[0]) != "committed" || text(rows[1]) != "after" {
		t.Errorf("rows %v, want the committed one then the later one", rows)
	}
}

func text(r session.Row) string {
	return r.Entry.(session.UserMessage).Parts[0].(model.Text).Text
}
