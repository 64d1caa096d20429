package subagent_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/model"
)

// instant answers every request at once, reporting when it arrived.
type instant struct{ arrived chan<- time.Time }

func (instant) Name() string { return "instant" }

func (m instant) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		m.arrived <- time.Now()
		yield(model.Completed{Response: model.Response{Message: model.Message{Role: model.RoleAssistant,
			Parts: model.Parts{model.Text{Text: "ok"}}}, Stop: model.StopEndTurn}}, nil)
	}
}

// BenchmarkSpawnOverhead measures a sub-agent's start, from the spawn to
// its first request reaching a zero-latency model: its session created on
// a real SQLite file and opened (lock, rows, tools, checklist, prompt,
// engine) and its first request built. ms/first-request is that time.
func BenchmarkSpawnOverhead(b *testing.B) {
	f := newFixture(b, `[]`, nil)
	arrived := make(chan time.Time, 1)
	f.opts.Profiles = func(string) (host.Profile, error) {
		return host.Profile{Name: "bench", Provider: instant{arrived: arrived}}, nil
	}
	p := f.parent()
	sp := p.Spawner()
	ctx := b.Context()
	var total time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		c, err := sp.Spawn(ctx, subagent.SpawnOptions{CallID: "call", Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Run(ctx, "task"); err != nil {
			b.Fatal(err)
		}
		total += (<-arrived).Sub(start)
		n++
	}
	b.ReportMetric(float64(total.Microseconds())/float64(n)/1000, "ms/first-request")
}
