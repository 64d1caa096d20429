package sqlite_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// Tool output of the benchmarks: a file read of some 1.8 KB of code, rich
// in what JSON escapes, and a short command's output.
var (
	codeOutput  = strings.Repeat("\tif err != nil {\n\t\treturn fmt.Errorf(\"read thing: %w\", err)\n\t}\n", 30)
	shortOutput = "ok  \tmeka.dev/meka/internal/sqlite\t0.6s\n"
)

// round returns the rows of one model round in turn: an assistant message
// with text and three tool calls, and their three results.
func round(turn int64, n int, output string) []session.Row {
	calls := make(model.Parts, 0, 4)
	calls = append(calls, model.Text{Text: strings.Repeat("Let me look at the code around that function. ", 6)})
	rows := []session.Row{{Turn: turn}}
	for i := range 3 {
		c := model.ToolCall{
			ID:        fmt.Sprintf("call_%d_%d", n, i),
			Name:      "file_read",
			Arguments: json.RawMessage(fmt.Sprintf(`{"path":"internal/pkg/file_%d.go","offset":%d,"limit":200}`, i, n)),
		}
		calls = append(calls, c)
		rows = append(rows, session.Row{Turn: turn, Entry: session.ToolResult{
			CallID:  c.ID,
			Name:    c.Name,
			Status:  session.StatusOK,
			Content: model.Parts{model.Text{Text: output}},
		}})
	}
	rows[0].Entry = session.AssistantMessage{
		Parts: calls,
		Usage: model.Usage{InputTokens: 24000, OutputTokens: 310, CacheReadTokens: 20000},
		Stop:  model.StopToolUse,
		Model: "model-x",
	}
	return rows
}

func benchDB(b *testing.B) *sqlite.Sessions {
	b.Helper()
	return open(b, filepath.Join(b.TempDir(), "meka.db"), sqlite.Options{}).Sessions()
}

// BenchmarkAppendRound appends one round (4 rows, 6 KB of JSON) per op,
// the write an agent makes after each model response.
func BenchmarkAppendRound(b *testing.B) { benchAppendRound(b, benchDB(b)) }

// BenchmarkAppendRoundFed is BenchmarkAppendRound with a feed, as every
// front door opens the store: each append stores an event too.
func BenchmarkAppendRoundFed(b *testing.B) {
	feed := func(id string, rows []session.Row) []sqlite.FeedEntry {
		return []sqlite.FeedEntry{{SessionID: id, Turn: rows[0].Turn, Type: "message.created", Data: []byte(`{"role":"assistant"}`)}}
	}
	benchAppendRound(b, open(b, filepath.Join(b.TempDir(), "meka.db"), sqlite.Options{Feed: feed}).Sessions())
}

// benchAppendRound appends one round per op to a new session of s.
func benchAppendRound(b *testing.B, s session.Store) {
	m, err := s.Create(b.Context(), session.Meta{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	rows := round(1, 0, codeOutput)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := s.Append(b.Context(), m.ID, rows); err != nil {
			b.Fatal(err)
		}
	}
}

// sessionOf fills a session with n rows, turns of a user message and three
// rounds, and returns its id and the size of its rows' JSON.
func sessionOf(b *testing.B, s *sqlite.Sessions, n int, output string) (string, int64) {
	b.Helper()
	m, err := s.Create(b.Context(), session.Meta{Cwd: "/w"})
	if err != nil {
		b.Fatal(err)
	}
	var all []session.Row
	for turn := int64(1); len(all) < n; turn++ {
		all = append(all, session.Row{Turn: turn, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "please fix the failing test in the store"}}}})
		for i := 0; i < 3 && len(all) < n; i++ {
			all = append(all, round(turn, i, output)...)
		}
	}
	all = all[:n]
	var size int64
	for _, r := range all {
		_, p, err := session.EncodeEntry(r.Entry)
		if err != nil {
			b.Fatal(err)
		}
		size += int64(len(p))
	}
	if _, err := s.Append(b.Context(), m.ID, all); err != nil {
		b.Fatal(err)
	}
	return m.ID, size
}

// BenchmarkOpenSession2000 is what opening a 2,000-row session costs the
// store: Get by prefix, then every row read and decoded. "code" has file
// reads for tool results (2.9 MB of JSON), "short" one-line outputs.
func BenchmarkOpenSession2000(b *testing.B) {
	for _, tc := range []struct{ name, output string }{{"code", codeOutput}, {"short", shortOutput}} {
		b.Run(tc.name, func(b *testing.B) {
			s := benchDB(b)
			id, size := sessionOf(b, s, 2000, tc.output)
			b.SetBytes(size)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				m, err := s.Get(b.Context(), id[:8])
				if err != nil {
					b.Fatal(err)
				}
				rows, err := s.Rows(b.Context(), m.ID, 0)
				if err != nil || len(rows) != 2000 {
					b.Fatalf("Rows = %d rows, %v", len(rows), err)
				}
			}
		})
	}
}

// BenchmarkTail200 reads the newest 200 rows of a 2,000-row session.
func BenchmarkTail200(b *testing.B) {
	s := benchDB(b)
	id, _ := sessionOf(b, s, 2000, codeOutput)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		rows, err := s.Tail(b.Context(), id, 200)
		if err != nil || len(rows) != 200 {
			b.Fatalf("Tail = %d rows, %v", len(rows), err)
		}
	}
}

// reportCPU reports the process's CPU time per op beside the wall time,
// which a loaded machine inflates. Call it as defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start, ok := cpuTime()
	return func() {
		if end, _ := cpuTime(); ok {
			b.ReportMetric(float64((end-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkRequestListings lists a session's jobs and its scope's memories,
// as the [Scheduled] and [Memories] parts of every model request do.
func BenchmarkRequestListings(b *testing.B) {
	db := open(b, filepath.Join(b.TempDir(), "meka.db"), sqlite.Options{})
	ctx := b.Context()
	m, err := db.Sessions().Create(ctx, session.Meta{Cwd: "/work"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 3 {
		if _, err := db.Memories().Put(ctx, "", "", fmt.Sprintf("note %d: the tests run with -race", i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		jobs, err := db.Schedules().List(ctx, m.ID)
		if err != nil || len(jobs) != 0 {
			b.Fatalf("List = %d jobs, %v", len(jobs), err)
		}
		notes, err := db.Memories().List(ctx, "", 21)
		if err != nil || len(notes) != 3 {
			b.Fatalf("List = %d memories, %v", len(notes), err)
		}
	}
}
