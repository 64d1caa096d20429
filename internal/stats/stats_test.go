package stats_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/stats"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// store is what the test writes through and stats reads from.
type store struct {
	stats.Source
	sessions session.Store
}

// known writes a log with a known spend: session a (project web) of two
// turns on two days, one on another model; its fork, which adds one call;
// a turn rewound away; a child session's call; and rows that spend
// nothing.
func known(t *testing.T, st session.Store, clock *time.Time) (a, fork string) {
	t.Helper()
	ctx := t.Context()
	ma, err := st.Create(ctx, session.Meta{Cwd: "/w", Project: "web", Title: "build the site"})
	if err != nil {
		t.Fatal(err)
	}
	call := func(model_ string, in, cached, out int, cost float64) session.AssistantMessage {
		return session.AssistantMessage{Parts: model.Parts{model.Text{Text: "ok"}}, Model: model_,
			Usage: model.Usage{InputTokens: in, CacheReadTokens: cached, OutputTokens: out, Cost: cost}}
	}
	user := session.UserMessage{Parts: model.Parts{model.Text{Text: "go"}}}
	appendRows := func(id string, turn int64, es ...session.Entry) {
		t.Helper()
		var rows []session.Row
		for _, e := range es {
			rows = append(rows, session.Row{Turn: turn, Entry: e})
		}
		if _, err := st.Append(ctx, id, rows); err != nil {
			t.Fatal(err)
		}
	}
	*clock = time.Date(2026, 8, 1, 23, 30, 0, 0, time.UTC) // 1 Aug in UTC, 2 Aug in Berlin
	appendRows(ma.ID, 1, user, call("gpt-5.5", 100, 1000, 10, 0.5), session.Notice{Title: "n"}, call("gpt-5.5", 200, 0, 20, 0.25))
	*clock = time.Date(2026, 8, 3, 12, 0, 0, 0, time.UTC)
	appendRows(ma.ID, 2, user, call("claude-sonnet-4-5", 50, 0, 5, 1))
	mf, err := st.Fork(ctx, ma.ID, -1)
	if err != nil {
		t.Fatal(err)
	}
	appendRows(mf.ID, 3, user, call("claude-sonnet-4-5", 7, 0, 1, 0.125))
	appendRows(ma.ID, 3, user, call("gpt-5.5", 9999, 0, 9999, 99))
	if err := st.Rewind(ctx, ma.ID, 2); err != nil {
		t.Fatal(err)
	}
	mc, err := st.Create(ctx, session.Meta{Cwd: "/w", ParentID: ma.ID})
	if err != nil {
		t.Fatal(err)
	}
	appendRows(mc.ID, 1, user, call("gpt-5.4-mini", 3, 0, 3, 0.0625))
	return ma.ID, mf.ID
}

// open opens the store named with the clock given.
func open(t *testing.T, name string, clock *time.Time) store {
	now := func() time.Time { return *clock }
	if name == "sqlite" {
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return store{db, db.Sessions()}
	}
	pg, err := postgres.Open(t.Context(), pgtest.NewDatabase(t), postgres.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	return store{pg, pg.Sessions()}
}

func TestStatsOfAKnownLog(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			clock := new(time.Time)
			st := open(t, name, clock)
			a, fork := known(t, st.sessions, clock)
			berlin, _ := time.LoadLocation("Europe/Berlin")
			now := func() time.Time { return time.Date(2026, 8, 10, 0, 0, 0, 0, time.UTC) }
			run := func(o stats.Options) *stats.Report {
				t.Helper()
				o.Now = now
				r, err := stats.Run(context.Background(), st, o)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			r := run(stats.Options{By: "model"})
			got := map[string]stats.Group{}
			for _, g := range r.Groups {
				got[g.Key] = g
			}
			if g := got["gpt-5.5"]; g.Calls != 2 || g.Input != 300 || g.Cached != 1000 || g.Output != 30 || g.Cost != 0.75 {
				t.Errorf("gpt-5.5: %+v", g)
			}
			if g := got["claude-sonnet-4-5"]; g.Calls != 2 || g.Input != 57 || g.Cost != 1.125 {
				t.Errorf("claude: %+v (the fork's copy counted twice?)", g)
			}
			if r.Total.Calls != 5 || r.Total.Cost != 1.9375 || r.Total.Input != 360 || len(r.Groups) != 3 {
				t.Errorf("total %+v groups %+v", r.Total, r.Groups)
			}

			byDay := func(loc *time.Location) string {
				var keys []string
				for _, g := range run(stats.Options{By: "day", Location: loc}).Groups {
					keys = append(keys, g.Key)
				}
				return strings.Join(keys, " ")
			}
			if got := byDay(time.UTC); got != "2026-08-01 2026-08-03" {
				t.Errorf("days in UTC: %s", got)
			}
			if got := byDay(berlin); got != "2026-08-02 2026-08-03" {
				t.Errorf("days in Berlin: %s", got)
			}

			sessions := run(stats.Options{By: "session"})
			for _, g := range sessions.Groups {
				switch g.Key {
				case a:
					if g.Calls != 3 || g.Title != "build the site" || g.Cost != 1.75 {
						t.Errorf("session a: %+v", g)
					}
				case fork:
					if g.Calls != 1 || g.Cost != 0.125 {
						t.Errorf("the fork counts its own call only: %+v", g)
					}
				}
			}
			projects := run(stats.Options{By: "project"})
			if len(projects.Groups) != 2 || projects.Groups[0].Key != "(none)" || projects.Groups[1].Key != "web" || projects.Groups[1].Calls != 4 {
				t.Errorf("projects %+v", projects.Groups)
			}
			since := run(stats.Options{By: "model", Since: time.Date(2026, 8, 2, 0, 0, 0, 0, time.UTC)})
			if since.Total.Calls != 3 {
				t.Errorf("since 2 Aug: %+v", since.Total)
			}

			var js bytes.Buffer
			if err := stats.WriteJSON(&js, r); err != nil {
				t.Fatal(err)
			}
			var back stats.Report
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Total.Cost != r.Total.Cost || back.By != "model" {
				t.Errorf("json %s", js.String())
			}
			var txt bytes.Buffer
			if err := stats.WriteText(&txt, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(txt.String(), "gpt-5.5") || !strings.Contains(txt.String(), "1.9375") {
				t.Errorf("text:\n%s", txt.String())
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if got, err := stats.ParseSince("2026-08-01", berlin); err != nil || !got.Equal(time.Date(2026, 7, 31, 22, 0, 0, 0, time.UTC)) {
		t.Errorf("%v %v", got, err)
	}
	if _, err := stats.ParseSince("last week", berlin); err == nil || !strings.Contains(err.Error(), "2026-08-01") {
		t.Errorf("err %v", err)
	}
}

// BenchmarkSpend adds up 20,000 model calls of 200 sessions in a SQLite
// file, as meka stats does.
func BenchmarkSpend(b *testing.B) {
	db, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	long := strings.Repeat("a reply of some length ", 100)
	for s := range 200 {
		m, err := db.Sessions().Create(b.Context(), session.Meta{Cwd: "/w", Project: []string{"a", "b"}[s%2]})
		if err != nil {
			b.Fatal(err)
		}
		var rows []session.Row
		for i := range 100 {
			rows = append(rows, session.Row{Turn: int64(i + 1), Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: long}},
				Model: "gpt-5.5", Usage: model.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 5000, Cost: 0.01}}})
		}
		if _, err := db.Sessions().Append(b.Context(), m.ID, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		r, err := stats.Run(b.Context(), db, stats.Options{By: "day"})
		if err != nil || r.Total.Calls != 20000 {
			b.Fatalf("%+v %v", r, err)
		}
	}
}
