package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"meka.dev/meka/internal/postgres"
	"meka.dev/meka/internal/postgres/pgtest"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// codeOutput is a file read of some 1.8 KB of code, rich in what JSON
// escapes, as internal/sqlite's benchmarks use.
var codeOutput = strings.Repeat("\tif err != nil {\n\t\treturn fmt.Errorf(\"read thing: %w\", err)\n\t}\n", 30)

// round returns the rows of one model round in turn: an assistant message
// with text and three tool calls, and their three results.
func round(turn int64, n int) []session.Row {
	calls := model.Parts{model.Text{Text: strings.Repeat("Let me look at the code around that function. ", 6)}}
	rows := []session.Row{{Turn: turn}}
	for i := range 3 {
		c := model.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", n, i),
			Name:      "file_read",
			Arguments: json.RawMessage(fmt.Sprintf(`{"path":"internal/pkg/file_%d.go","offset":%d,"limit":200}`, i, n)),
		}
		calls = append(calls, c)
		rows = append(rows, session.Row{Turn: turn, Entry: session.ToolResult{
			CallID: c.ID, Name: c.Name, Status: session.StatusOK, Content: model.Parts{model.Text{Text: codeOutput}},
		}})
	}
	rows[0].Entry = session.AssistantMessage{Parts: calls, Usage: model.Usage{InputTokens: 24000, OutputTokens: 310}, Stop: model.StopToolUse, Model: "model-x"}
	return rows
}

// BenchmarkAppendRound appends one round (4 rows, 6 KB of JSON) per op
// under a held lock, so every append is fenced.
// With "feed", each row also stores a feed event in the append's
// transaction, as meka's composition root asks.
func BenchmarkAppendRound(b *testing.B) {
	feed := func(sid string, rows []session.Row) []postgres.FeedEntry {
		out := make([]postgres.FeedEntry, len(rows))
		for i, r := range rows {
			out[i] = postgres.FeedEntry{SessionID: sid, Turn: r.Turn, Type: r.Entry.Kind(), Data: json.RawMessage(fmt.Sprintf(`{"row":%d}`, r.Seq))}
		}
		return out
	}
	b.Run("plain", func(b *testing.B) { benchAppend(b, postgres.Options{}) })
	b.Run("feed", func(b *testing.B) { benchAppend(b, postgres.Options{Feed: feed}) })
}

func benchAppend(b *testing.B, opts postgres.Options) {
	db := open(b, pgtest.NewDatabase(b), opts)
	ctx := b.Context()
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	l, err := db.Sessions().Lock(ctx, m.ID, session.Holder{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Release(ctx)
	rows := round(1, 0)
	b.ResetTimer()
	for b.Loop() {
		if _, err := db.Sessions().Append(ctx, m.ID, rows); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenSession reads a 2,000-row session (500 rounds), what
// resuming it costs the store.
func BenchmarkOpenSession(b *testing.B) {
	db := open(b, pgtest.NewDatabase(b), postgres.Options{})
	ctx := b.Context()
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	var all []session.Row
	for i := range 500 {
		all = append(all, round(int64(i/5+1), i)...)
	}
	if _, err := db.Sessions().Append(ctx, m.ID, all); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start, ok := cpuTime()
	for b.Loop() {
		rows, err := db.Sessions().Rows(ctx, m.ID, 0)
		if err != nil || len(rows) != 2000 {
			b.Fatal(len(rows), err)
		}
	}
	// On a loaded machine the wall clock says little; this process's CPU
	// time (decoding, mostly; the server's is not counted) says more.
	if end, _ := cpuTime(); ok {
		b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkClaimDue reads the 100 due jobs among 10,000 and claims them,
// one sweep's work; the leases are handed back between ops, untimed.
func BenchmarkClaimDue(b *testing.B) {
	url := pgtest.NewDatabase(b)
	db := open(b, url, postgres.Options{})
	ctx := b.Context()
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 8, 11, 13, 0, 0, 0, time.UTC)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	// 9,900 jobs due in the future, 100 due now.
	if _, err := conn.Exec(ctx, `INSERT INTO schedule_jobs (id, session_id, prompt, kind, spec, interval_us, next_at, created_at)
SELECT gen_random_uuid()::text, $1, 'p', 'every', '1h', 3600000000, $2::timestamptz + (CASE WHEN i <= 100 THEN -1 ELSE i END) * interval '1 minute', $2
FROM generate_series(1, 10000) AS i`, m.ID, now); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE schedule_jobs`); err != nil {
		b.Fatal(err)
	}
	s := db.Schedules()
	b.ResetTimer()
	for b.Loop() {
		due, err := s.Due(ctx, now, 100)
		if err != nil || len(due) != 100 {
			b.Fatal(len(due), err)
		}
		ids := make([]string, len(due))
		for i, j := range due {
			ids[i] = j.ID
		}
		got, err := s.Claim(ctx, postgres.Claim{IDs: ids, Owner: "bench", Now: now, Until: now.Add(time.Minute), MaxFailed: 3, Held: "x"})
		if err != nil || len(got) != 100 {
			b.Fatal(len(got), err)
		}
		b.StopTimer()
		if _, err := conn.Exec(ctx, `UPDATE schedule_jobs SET lease_owner = '', lease_until = NULL, failed_claims = 0 WHERE lease_owner = 'bench'`); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
