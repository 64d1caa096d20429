package archive_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"meka.dev/meka/internal/archive"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// bigSession is 2,000 rows: 500 rounds of a message, a call and its
// result, with the odd user message between.
func bigSession(b *testing.B) (session.Store, string) {
	store := openStore(b)
	var rs []session.Row
	for i := 0; len(rs) < 2000; i++ {
		turn := int64(i/10 + 1)
		if i%10 == 0 {
			rs = append(rs, session.Row{Turn: turn, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("step %d: read the next file", i)}}}})
		}
		id := fmt.Sprintf("c%d", i)
		rs = append(rs,
			session.Row{Turn: turn, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "Reading it."},
				model.ToolCall{ID: id, Name: "file_read", Arguments: json.RawMessage(`{"path":"src/file.go"}`)}}, Usage: model.Usage{InputTokens: 900, OutputTokens: 40}}},
			session.Row{Turn: turn, Entry: session.ToolResult{CallID: id, Name: "file_read", Status: session.StatusOK,
				Content: model.Parts{model.Text{Text: string(bytes.Repeat([]byte("package main // a line of the file\n"), 20))}}}})
	}
	m := seed(b, store, rs[:2000])
	return store, m.ID
}

// go test -bench Archive ./internal/archive: export and import of a
// 2,000-row session (the issue asks under 100 ms each).
func BenchmarkArchiveExport2000(b *testing.B) {
	store, id := bigSession(b)
	ctx := context.Background()
	var buf bytes.Buffer
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		buf.Reset()
		s, err := archive.Load(ctx, store, id)
		if err != nil {
			b.Fatal(err)
		}
		if err := archive.WriteJSON(&buf, s, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
	reportCPU(b, start)
}

func BenchmarkArchiveImport2000(b *testing.B) {
	store, id := bigSession(b)
	ctx := context.Background()
	s, _ := archive.Load(ctx, store, id)
	var buf bytes.Buffer
	archive.WriteJSON(&buf, s, time.Now())
	to := openStore(b)
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		_, s, err := archive.ReadJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := archive.Import(ctx, to, s); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
