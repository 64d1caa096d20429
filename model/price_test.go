package model_test

import (
	"context"
	"iter"
	"math"
	"testing"

	"meka.dev/meka/model"
)

func TestPricesLookup(t *testing.T) {
	ps := model.BuiltinPrices()
	ps["my-local"] = model.Price{Input: 1}
	for _, tc := range []struct {
		id, want string // want "" for no price
	}{
		{"gpt-4.1", "gpt-4.1"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-3-5-haiku@20241022", "claude-3-5-haiku"},
		{"claude-3-5-haiku-latest", "claude-3-5-haiku"},
		{"models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"openai/gpt-5", "gpt-5"},
		{"my-local", "my-local"},
		{"gpt-4.1-turbo", ""},     // a suffix that is not a date is another model
		{"claude-sonnet-4-7", ""}, // nor is a version the table lacks
		{"llama3", ""},
		{"", ""},
	} {
		got, ok := ps.Lookup(tc.id)
		if tc.want == "" {
			if ok {
				t.Errorf("Lookup(%q) = %+v, want no price", tc.id, got)
			}
			continue
		}
		if !ok || got != ps[tc.want] {
			t.Errorf("Lookup(%q) = %+v, %v; want %s's %+v", tc.id, got, ok, tc.want, ps[tc.want])
		}
	}
}

func TestPriceCost(t *testing.T) {
	p := model.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := model.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000}
	if got, want := p.Cost(u), 3+1.5+0.6+1.5; math.Abs(got-want) > 1e-9 {
		t.Fatalf("Cost = %v, want %v", got, want)
	}
	if sum := u.Add(model.Usage{Cost: 0.25}).Add(model.Usage{Cost: 0.5}); sum.Cost != 0.75 {
		t.Fatalf("Add sums cost to %v, want 0.75", sum.Cost)
	}
}

type answering struct{ model string }

func (answering) Name() string { return "fake" }
func (a answering) Stream(context.Context, *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		if !yield(model.TextDelta{Text: "hi"}, nil) {
			return
		}
		yield(model.Completed{Response: model.Response{Model: a.model,
			Usage: model.Usage{InputTokens: 2_000_000, OutputTokens: 1_000_000, Cost: 99}}}, nil)
	}
}

func TestWithPrices(t *testing.T) {
	ps := model.Prices{"asked": {Input: 1, Output: 2}, "answered": {Input: 10, Output: 20}}
	for _, tc := range []struct {
		answered, asked string
		want            float64
	}{
		{"answered", "asked", 40},          // the model that answered is what was spent on
		{"answered-20250101", "asked", 40}, // under its alias
		{"unlisted", "asked", 4},           // else the profile's model
		{"", "asked", 4},
		{"unlisted", "unlisted-too", 0}, // unknown: 0, whatever the adapter said
	} {
		p := model.WithPrices(answering{tc.answered}, ps, tc.asked)
		if p.Name() != "fake" {
			t.Fatalf("Name = %q, want the wrapped provider's", p.Name())
		}
		resp, err := model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.Cost != tc.want {
			t.Errorf("%s asked as %s: cost %v, want %v", tc.answered, tc.asked, resp.Usage.Cost, tc.want)
		}
	}
}
