package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// countFold counts user messages; its state must survive compaction.
type countFold struct{ n int }

func (f *countFold) Name() string { return "count" }
func (f *countFold) Reset()       { f.n = 0 }
func (f *countFold) Restore(b json.RawMessage) error {
	return json.Unmarshal(b, &f.n)
}
func (f *countFold) Checkpoint() (json.RawMessage, error) { return json.Marshal(f.n) }
func (f *countFold) Apply(s session.Step) {
	if _, ok := s.Entry.(session.UserMessage); ok {
		f.n++
	}
}

type compactorFunc func(context.Context) string

func (f compactorFunc) CompactionText(ctx context.Context) string { return f(ctx) }

func TestAutomaticCompaction(t *testing.T) {
	h := newHarness(t, `[
	 {"text":"one","usage":{"input_tokens":900,"output_tokens":10}},
	 {"text":"the summary","usage":{"input_tokens":950,"output_tokens":40}},
	 {"text":"two","usage":{"input_tokens":50,"output_tokens":5}}]`)
	fold := &countFold{}
	var mu sync.Mutex
	var events []agent.Event
	opts := agent.Options{ContextWindow: 1000, Folds: []session.Fold{fold},
		Compactors: []agent.CompactionContributor{compactorFunc(func(context.Context) string { return "VERBATIM" })},
		Events: func(ev agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		}}
	e := h.engine(opts)
	if _, err := e.Run(t.Context(), userText("first")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	events = nil
	mu.Unlock()
	res, err := e.Run(t.Context(), userText("second"))
	if err != nil || res.Reply != "two" {
		t.Fatalf("res %+v err %v", res, err)
	}
	// The summary's model call is the turn's spend, and the gauge is
	// reported once the conversation is compacted.
	if res.Usage.InputTokens != 1000 || res.Usage.OutputTokens != 45 {
		t.Fatalf("turn usage %+v, want the compaction's included", res.Usage)
	}
	mu.Lock()
	var sawCompacted, gauge bool
	for _, ev := range events {
		switch ev := ev.(type) {
		case agent.Compacted:
			sawCompacted = ev.Usage.OutputTokens == 40
		case agent.Usage:
			if sawCompacted && !gauge {
				gauge = true
				if ev.Round.InputTokens != 950 || ev.Turn.InputTokens != 950 || ev.ContextTokens <= 0 || ev.ContextTokens >= 900 || ev.Window != 1000 {
					t.Errorf("usage after the compaction: %+v", ev)
				}
			}
		}
	}
	mu.Unlock()
	if !sawCompacted || !gauge {
		t.Fatalf("compacted %v, usage after it %v", sawCompacted, gauge)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 3 || len(reqs[1].Tools) != 0 {
		t.Fatalf("want a summary request between the turns, got %d requests", len(reqs))
	}
	msgs := reqs[2].Messages
	if len(msgs) != 2 || !strings.Contains(msgs[0].Text(), "the summary\n\n") || !strings.HasSuffix(msgs[0].Text(), "</first-user-message>\n\nVERBATIM") || msgs[1].Text() != "second" {
		t.Fatalf("request after compaction: %+v", msgs)
	}
	rows := h.rows()
	i := session.LatestCompaction(rows)
	if i < 0 {
		t.Fatal("no compaction row")
	}
	c := rows[i].Entry.(session.Compaction)
	if string(c.Checkpoint["count"]) != "2" {
		t.Fatalf("checkpoint %s", c.Checkpoint["count"])
	}
	// Replaying from the boundary restores the fold.
	fold2 := &countFold{}
	f := session.NewFolder(fold2)
	if err := f.Replay(rows); err != nil || fold2.n != 2 {
		t.Fatalf("replayed count %d err %v", fold2.n, err)
	}
}

func TestFailedCompactionLeavesLog(t *testing.T) {
	h := newHarness(t, `[{"text":"one"},{"error":{"status":400,"body":"no"}}]`)
	e := h.engine(agent.Options{})
	if _, err := e.Run(t.Context(), userText("first")); err != nil {
		t.Fatal(err)
	}
	// Only one turn: nothing to compact.
	if err := e.Compact(t.Context()); err != agent.ErrNothingToCompact {
		t.Fatalf("err %v", err)
	}
	before := len(h.rows())
	h2 := newHarness(t, `[{"text":"one"},{"text":"two"},{"error":{"status":400,"body":"no"}}]`)
	var events []string
	e2 := h2.engine(agent.Options{Events: func(ev agent.Event) {
		switch ev := ev.(type) {
		case agent.CompactionStarted:
			events = append(events, "started")
		case agent.CompactionFailed:
			events = append(events, fmt.Sprintf("failed canceled=%v", ev.Canceled))
		case agent.Compacted:
			events = append(events, "compacted")
		}
	}})
	e2.Run(t.Context(), userText("a"))
	e2.Run(t.Context(), userText("b"))
	n := len(h2.rows())
	if err := e2.Compact(t.Context()); err == nil {
		t.Fatal("compaction with a failing provider succeeded")
	}
	if len(h2.rows()) != n || before != 2 {
		t.Fatalf("log changed: %d -> %d rows", n, len(h2.rows()))
	}
	if strings.Join(events, ",") != "started,failed canceled=false" {
		t.Fatalf("events %v", events)
	}
}

// BenchmarkRound measures the engine's overhead for one round with a
// zero-latency provider over a 200-row history, storage included.
func BenchmarkRound(b *testing.B) {
	h := newHarness(b, `[]`)
	e, err := agent.New(agent.Options{Provider: instant{}, Log: h}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ { // 200 rows of history
		if _, err := e.Run(b.Context(), userText(fmt.Sprintf("message %d with some text in it", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Run(b.Context(), userText("go on")); err != nil {
			b.Fatal(err)
		}
	}
}

// seqLog numbers rows and keeps nothing: it isolates the engine's own
// overhead from the database's in BenchmarkRoundEngineOnly.
type seqLog struct{ seq int64 }

func (l *seqLog) Append(_ context.Context, rows []session.Row) ([]session.Row, error) {
	for i := range rows {
		l.seq++
		rows[i].Seq = l.seq
	}
	return rows, nil
}

// instant answers every request at once with the same reply and records
// nothing, so a benchmark measures the engine rather than the provider.
type instant struct{}

func (instant) Name() string { return "instant" }
func (instant) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.TextDelta{Text: "reply"}, nil) {
			return
		}
		yield(model.Completed{Response: model.Response{
			Message: model.Message{Role: model.RoleAssistant, Parts: model.Parts{model.Text{Text: "reply"}}},
			Usage:   model.Usage{InputTokens: 10, OutputTokens: 5}, Stop: model.StopEndTurn}}, nil)
	}
}

func BenchmarkRoundEngineOnly(b *testing.B) {
	// A 200-row history, kept between 200 and 300 rows by starting over
	// every 50 turns outside the timer.
	var history []session.Row
	log := &seqLog{}
	seed, err := agent.New(agent.Options{Provider: instant{}, Log: log}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := seed.Run(b.Context(), userText(fmt.Sprintf("message %d with some text in it", i))); err != nil {
			b.Fatal(err)
		}
	}
	history = seed.Rows()
	var e *agent.Engine
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%50 == 0 {
			b.StopTimer()
			if e, err = agent.New(agent.Options{Provider: instant{}, Log: log}, history); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, err := e.Run(b.Context(), userText("go on")); err != nil {
			b.Fatal(err)
		}
	}
}
