package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

const unknownID = "0e0e0e0e-0e0e-4e0e-8e0e-0e0e0e0e0e0e"

// conversation returns the rows of one ordinary turn: a question, a tool
// call, its result and an answer.
func conversation(turn int64) []session.Row {
	call := model.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: "file_read", Arguments: json.RawMessage(`{"path":"main.go"}`)}
	return []session.Row{
		{Turn: turn, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("question %d", turn)}}}},
		{Turn: turn, Entry: session.AssistantMessage{Parts: model.Parts{call}, Usage: model.Usage{InputTokens: 10, OutputTokens: 2}, Stop: model.StopToolUse}},
		{Turn: turn, Entry: session.ToolResult{CallID: call.ID, Name: call.Name, Status: session.StatusOK, Content: model.Parts{model.Text{Text: "package main"}}}},
		{Turn: turn, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("answer %d", turn)}}, Stop: model.StopEndTurn}},
	}
}

// turns returns the rows of turns 1 to n.
func turns(n int64) []session.Row {
	var rows []session.Row
	for i := int64(1); i <= n; i++ {
		rows = append(rows, conversation(i)...)
	}
	return rows
}

// everyVariant returns one row of each entry variant, every field set,
// with every part variant among them.
func everyVariant() []session.Row {
	return []session.Row{
		{Turn: 1, Entry: session.UserMessage{
			Parts: model.Parts{
				model.Text{Text: "look at this: ünïcödé \u2603 \"quoted\" <tag> &amp;\n"},
				model.Image{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 0xff}, Name: "shot.png"},
				model.Resource{URI: "file:///projects/a.go", Name: "a.go", MimeType: "text/x-go", Text: "package a\n"},
			},
			Source: session.SourceSteer,
		}},
		{Turn: 1, Entry: session.AssistantMessage{
			Parts: model.Parts{
				model.Thinking{Text: "let me think", Signature: "c2ln", Redacted: "cmVk", Provider: "anthropic"},
				model.Text{Text: "Reading it."},
				model.ToolCall{ID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go","limit":10}`)},
			},
			Usage: model.Usage{InputTokens: 1200, OutputTokens: 34, CacheReadTokens: 1000, CacheWriteTokens: 56},
			Stop:  model.StopToolUse,
			Model: "model-x-2026",
		}},
		{Turn: 1, Entry: session.ToolResult{
			CallID: "call_1",
			Name:   "file_read",
			Status: session.StatusError,
			Content: model.Parts{
				model.Text{Text: "no such file"},
				model.ToolResult{CallID: "inner_1", Name: "nested", Content: model.Parts{model.Text{Text: "inner"}}, IsError: true},
			},
			Change: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-x\n+y\n",
			State:  json.RawMessage(`{"items":[{"id":"a","done":true}]}`),
		}},
		{Turn: 2, Entry: session.Notice{Severity: session.SeverityWarning, Title: "lost a write", Description: "the disk was full"}},
		{Turn: 2, Entry: session.Compaction{
			Summary:  "we read a.go",
			KeptFrom: 3,
			Checkpoint: map[string]json.RawMessage{
				"checklist": json.RawMessage(`{"items":[]}`),
				"plan":      json.RawMessage(`[{"step":"x","status":"pending"}]`),
			},
		}},
		{Turn: 3, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "task t1 finished"}}, Source: session.SourceTask, Tasks: []string{"t1", "t2"}}},
		// A schema's bytes come back as they went: the model is sent them.
		{Turn: 3, Entry: session.ToolSet{Source: "mcp", Tools: []session.ToolDef{{
			Name: "mcp__s__find", Description: "Find <things> & more", Server: "s", Remote: "find", ReadOnly: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"\u003cq\u003e"}},"required":["q"]}`),
		}}, Removed: []string{"mcp__s__gone"}}},
		{Turn: 3, Entry: session.HookRun{Event: "PreToolUse", Matcher: "Bash", Tool: "Bash", CallID: "c1",
			Source: "/w/.claude/settings.json", Command: "./guard.sh", Exit: 2, Decision: "block",
			Reason: "no rm", DurationMS: 12, Stderr: "no rm\n", Truncated: true, Confined: true}},
	}
}

func mustAppend(t *testing.T, s session.Store, id string, rows ...session.Row) []session.Row {
	t.Helper()
	got, err := s.Append(t.Context(), id, rows)
	if err != nil {
		t.Fatalf("Append to %s: %v", id, err)
	}
	if len(got) != len(rows) {
		t.Fatalf("Append returned %d rows, want %d", len(got), len(rows))
	}
	for i, r := range got {
		if r.Turn != rows[i].Turn || r.Time.IsZero() || !reflect.DeepEqual(r.Entry, rows[i].Entry) {
			t.Fatalf("Append returned row %d = %+v, want turn %d, a time and entry %+v", i, r, rows[i].Turn, rows[i].Entry)
		}
	}
	return got
}

func mustRows(t *testing.T, s session.Store, id string, from int64) []session.Row {
	t.Helper()
	rows, err := s.Rows(t.Context(), id, from)
	if err != nil {
		t.Fatalf("Rows(%s, %d): %v", id, from, err)
	}
	return rows
}

// checkRows compares rows by sequence, turn, time instant and entry.
func checkRows(t *testing.T, what string, got, want []session.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Turn != w.Turn || !g.Time.Equal(w.Time) || !reflect.DeepEqual(g.Entry, w.Entry) {
			t.Errorf("%s: row %d:\n got %d/%d %v %#v\nwant %d/%d %v %#v", what, i, g.Seq, g.Turn, g.Time, g.Entry, w.Seq, w.Turn, w.Time, w.Entry)
		}
	}
}

func checkSeqs(t *testing.T, what string, rows []session.Row, first int64) {
	t.Helper()
	for i, r := range rows {
		if r.Seq != first+int64(i) {
			t.Errorf("%s: row %d has seq %d, want %d", what, i, r.Seq, first+int64(i))
		}
	}
}

func testAppendReopen(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	m := mustCreate(t, s, session.Meta{Cwd: "/w"})
	if rows := mustRows(t, s, m.ID, 0); len(rows) != 0 {
		t.Errorf("Rows of a new session = %d rows, want none", len(rows))
	}

	first := mustAppend(t, s, m.ID, conversation(1)...)
	checkSeqs(t, "first Append", first, 1)
	second := mustAppend(t, s, m.ID, conversation(2)...)
	checkSeqs(t, "second Append", second, 5)
	all := append(first, second...)

	checkRows(t, "Rows(0)", mustRows(t, s, m.ID, 0), all)
	checkRows(t, "Rows(6)", mustRows(t, s, m.ID, 6), all[5:])
	checkRows(t, "Rows(100)", mustRows(t, s, m.ID, 100), nil)
	for _, tc := range []struct {
		n    int
		want []session.Row
	}{{0, nil}, {3, all[5:]}, {8, all}, {100, all}} {
		got, err := s.Tail(ctx, m.ID, tc.n)
		if err != nil {
			t.Fatalf("Tail(%d): %v", tc.n, err)
		}
		checkRows(t, fmt.Sprintf("Tail(%d)", tc.n), got, tc.want)
	}
	after := mustGet(t, s, m.ID)
	if !after.UpdatedAt.After(m.UpdatedAt) {
		t.Errorf("UpdatedAt after Append = %v, want after %v", after.UpdatedAt, m.UpdatedAt)
	}

	if _, err := s.Append(ctx, unknownID, conversation(1)); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Append to an unknown session: %v, want ErrNotFound", err)
	}
	if got, err := s.Append(ctx, m.ID, nil); err != nil || len(got) != 0 {
		t.Errorf("Append of no rows = %v, %v; want nothing", got, err)
	}
	if _, err := s.Append(ctx, unknownID, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Append of no rows to an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := s.Rows(ctx, unknownID, 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Rows of an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := s.Tail(ctx, unknownID, 5); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Tail of an unknown session: %v, want ErrNotFound", err)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = store(t, open)
	checkMeta(t, "Get after reopening", mustGet(t, s, m.ID), after)
	checkRows(t, "Rows after reopening", mustRows(t, s, m.ID, 0), all)
	checkSeqs(t, "Append after reopening", mustAppend(t, s, m.ID, conversation(3)...), 9)
}

func testRoundTrip(t *testing.T, open Opener) {
	s := store(t, open)
	m := mustCreate(t, s, session.Meta{Cwd: "/w"})
	want := mustAppend(t, s, m.ID, everyVariant()...)
	checkRows(t, "Rows", mustRows(t, s, m.ID, 0), want)
	s.Close()
	checkRows(t, "Rows after reopening", mustRows(t, store(t, open), m.ID, 0), want)
}

func testTitle(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	title := func(id string) string { t.Helper(); return mustGet(t, s, id).Title }

	long := strings.Repeat("ü", 150) + strings.Repeat("x", 150)
	m := mustCreate(t, s, session.Meta{Cwd: "/w"})
	mustAppend(t, s, m.ID, session.Row{Turn: 1, Entry: session.Notice{Severity: session.SeverityInfo, Title: "hello"}})
	if got := title(m.ID); got != "" {
		t.Errorf("title after a notice = %q, want empty", got)
	}
	mustAppend(t, s, m.ID,
		session.Row{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: long}, model.Image{MediaType: "image/png", Data: []byte{1}}}}},
		session.Row{Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "second"}}}},
	)
	want := strings.Repeat("ü", 150) + strings.Repeat("x", 50)
	if got := title(m.ID); got != want {
		t.Errorf("title = %q (%d runes), want the first 200 characters of the first user message", got, len([]rune(got)))
	}
	mustAppend(t, s, m.ID, session.Row{Turn: 2, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "later"}}}})
	if got := title(m.ID); got != want {
		t.Errorf("title after a later message = %q, want it unchanged", got)
	}

	named := mustCreate(t, s, session.Meta{Cwd: "/w", Title: "given"})
	mustAppend(t, s, named.ID, conversation(1)...)
	if got := title(named.ID); got != "given" {
		t.Errorf("title of a named session = %q, want %q", got, "given")
	}

	renamed := mustGet(t, s, m.ID)
	renamed.Title = "renamed"
	if err := s.Update(ctx, renamed); err != nil {
		t.Fatalf("Update: %v", err)
	}
	mustAppend(t, s, m.ID, conversation(3)...)
	if got := title(m.ID); got != "renamed" {
		t.Errorf("title after Update and Append = %q, want %q", got, "renamed")
	}
}

func testFork(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	src := mustCreate(t, s, session.Meta{Cwd: "/w", AdditionalDirs: []string{"/d"}, Profile: "p", Project: "proj", Permission: "workspace"})
	rows := mustAppend(t, s, src.ID, turns(3)...)
	src = mustGet(t, s, src.ID)

	fork, err := s.Fork(ctx, src.ID, -1)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if fork.ID == src.ID || fork.ParentID != "" {
		t.Errorf("Fork = id %s parent %q, want a new id and no parent", fork.ID, fork.ParentID)
	}
	want := src
	want.ID, want.CreatedAt, want.UpdatedAt, want.ForkedAt = fork.ID, fork.CreatedAt, fork.UpdatedAt, 3
	checkMeta(t, "Fork", fork, want)
	checkMeta(t, "Get of the fork", mustGet(t, s, fork.ID), want)
	checkRows(t, "rows of the fork", mustRows(t, s, fork.ID, 0), rows)

	// The two go their own ways.
	forkRows := mustAppend(t, s, fork.ID, conversation(4)...)
	checkSeqs(t, "Append to the fork", forkRows, 13)
	srcRows := mustAppend(t, s, src.ID, session.Row{Turn: 4, Entry: session.Notice{Severity: session.SeverityInfo, Title: "source only"}})
	checkRows(t, "source after both appended", mustRows(t, s, src.ID, 0), append(rows[:12:12], srcRows...))
	checkRows(t, "fork after both appended", mustRows(t, s, fork.ID, 0), append(rows[:12:12], forkRows...))
	if err := s.Rewind(ctx, fork.ID, 0); err != nil {
		t.Fatalf("Rewind of the fork: %v", err)
	}
	if got := mustRows(t, s, src.ID, 0); len(got) != 13 {
		t.Errorf("source has %d rows after the fork was rewound, want 13", len(got))
	}

	part, err := s.Fork(ctx, src.ID, 2)
	if err != nil {
		t.Fatalf("Fork through turn 2: %v", err)
	}
	checkRows(t, "fork through turn 2", mustRows(t, s, part.ID, 0), rows[:8])
	if got := mustGet(t, s, part.ID).ForkedAt; got != 2 {
		t.Errorf("fork through turn 2 has ForkedAt %d, want 2", got)
	}
	if _, err := s.Fork(ctx, unknownID, -1); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Fork of an unknown session: %v, want ErrNotFound", err)
	}
}

func testRewind(t *testing.T, open Opener) {
	ctx := t.Context()
	s := store(t, open)
	m := mustCreate(t, s, session.Meta{Cwd: "/w"})
	rows := mustAppend(t, s, m.ID, turns(3)...)

	if err := s.Rewind(ctx, m.ID, 1); err != nil {
		t.Fatalf("Rewind: %v", err)
	}
	checkRows(t, "rows after Rewind(1)", mustRows(t, s, m.ID, 0), rows[:4])
	again := mustAppend(t, s, m.ID, conversation(2)...)
	checkSeqs(t, "Append after Rewind", again, 5)
	if err := s.Rewind(ctx, m.ID, 5); err != nil {
		t.Fatalf("Rewind past the end: %v", err)
	}
	checkRows(t, "rows after Rewind past the end", mustRows(t, s, m.ID, 0), append(rows[:4:4], again...))
	if err := s.Rewind(ctx, m.ID, 0); err != nil {
		t.Fatalf("Rewind(0): %v", err)
	}
	checkRows(t, "rows after Rewind(0)", mustRows(t, s, m.ID, 0), nil)
	if err := s.Rewind(ctx, unknownID, 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Rewind of an unknown session: %v, want ErrNotFound", err)
	}
}

func testConcurrentAppend(t *testing.T, open Opener) {
	const (
		handles   = 2
		writers   = 4 // per handle
		appends   = 10
		batchSize = 3
	)
	stores := make([]session.Store, handles)
	for i := range stores {
		stores[i] = store(t, open)
	}
	m := mustCreate(t, stores[0], session.Meta{Cwd: "/w"})

	var wg sync.WaitGroup
	errs := make(chan error, handles*writers)
	got := make([][]session.Row, handles*writers)
	for w := range handles * writers {
		wg.Go(func() {
			s := stores[w%handles]
			for i := range appends {
				batch := make([]session.Row, batchSize)
				for j := range batch {
					batch[j] = session.Row{Turn: 1, Entry: session.Notice{Severity: session.SeverityInfo, Title: fmt.Sprintf("w%d a%d r%d", w, i, j)}}
				}
				rows, err := s.Append(t.Context(), m.ID, batch)
				if err != nil {
					errs <- err
					return
				}
				got[w] = append(got[w], rows...)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}

	const total = handles * writers * appends * batchSize
	seen := make(map[int64]string, total)
	for w, rows := range got {
		for i := 0; i < len(rows); i += batchSize {
			for j := range batchSize {
				r := rows[i+j]
				if r.Seq != rows[i].Seq+int64(j) {
					t.Errorf("writer %d: one Append got seqs %d and %d %d apart", w, rows[i].Seq, r.Seq, j)
				}
				title := r.Entry.(session.Notice).Title
				if prev, dup := seen[r.Seq]; dup {
					t.Errorf("seq %d given to %q and %q", r.Seq, prev, title)
				}
				seen[r.Seq] = title
			}
		}
	}
	stored := mustRows(t, stores[1], m.ID, 0)
	if len(stored) != total {
		t.Fatalf("stored %d rows, want %d", len(stored), total)
	}
	checkSeqs(t, "stored rows", stored, 1)
	for _, r := range stored {
		if title := r.Entry.(session.Notice).Title; seen[r.Seq] != title {
			t.Errorf("stored seq %d is %q, Append returned %q", r.Seq, title, seen[r.Seq])
		}
	}
}

// testRestore: every meka store restores (session.Restorer, for import):
// each row keeps its time, to the microsecond, and a row without one is
// stamped as Append does.
func testRestore(t *testing.T, open Opener) {
	s := store(t, open)
	r, ok := s.(*onceCloser).Store.(session.Restorer)
	if !ok {
		t.Fatal("the store does not implement session.Restorer")
	}
	m := mustCreate(t, s, session.Meta{Cwd: "/w", Permission: "read"})
	at := time.Date(2025, 9, 1, 10, 0, 2, 123456789, time.UTC)
	rows := conversation(1)
	for i := range rows {
		rows[i].Time = at.Add(time.Duration(i) * time.Second)
	}
	rows[len(rows)-1].Time = time.Time{}
	stored, err := r.Restore(context.Background(), m.ID, rows)
	if err != nil {
		t.Fatal(err)
	}
	got := mustRows(t, s, m.ID, 0)
	checkRows(t, "restored", got, stored)
	for i, row := range got {
		if i == len(got)-1 {
			if row.Time.Before(at.Add(24*time.Hour)) || !row.Time.Equal(stored[i].Time) {
				t.Errorf("row %d without a time got %v (returned %v)", i, row.Time, stored[i].Time)
			}
			continue
		}
		want := rows[i].Time.Truncate(time.Microsecond)
		if !row.Time.Equal(want) || !stored[i].Time.Equal(want) {
			t.Errorf("row %d: time %v (returned %v), want %v", i, row.Time, stored[i].Time, want)
		}
	}
}
