package model

import (
	"context"
	"iter"
	"strings"
)

// Price is what a model charges, in US dollars per million tokens of each
// kind Usage counts.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
}

// Cost is what u costs at p, in US dollars.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// Prices maps model ids to their prices. Look ids up with Lookup, which
// also finds a dated snapshot ("gpt-4.1-2025-04-14") under its alias.
type Prices map[string]Price

// Lookup returns the price of the model id: the id itself, else the id
// without a provider prefix ("openai/", "models/") or a date or "-latest"
// suffix. An unknown model has no price, never a price of zero.
func (ps Prices) Lookup(id string) (Price, bool) {
	if p, ok := ps[id]; ok {
		return p, true
	}
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
		if p, ok := ps[id]; ok {
			return p, true
		}
	}
	base := undated(id)
	if base == id {
		return Price{}, false
	}
	p, ok := ps[base]
	return p, ok
}

// undated strips a snapshot suffix: -latest, -YYYYMMDD or @YYYYMMDD
// (Vertex), -YYYY-MM-DD.
func undated(id string) string {
	if s, ok := strings.CutSuffix(id, "-latest"); ok {
		return s
	}
	digits := func(s string) bool {
		for _, c := range s {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	if n := len(id); n > 9 && (id[n-9] == '-' || id[n-9] == '@') && digits(id[n-8:]) {
		return id[:n-9]
	}
	if n := len(id); n > 11 && id[n-11] == '-' && id[n-6] == '-' && id[n-3] == '-' &&
		digits(id[n-10:n-6]) && digits(id[n-5:n-3]) && digits(id[n-2:]) {
		return id[:n-11]
	}
	return id
}

// WithPrices returns p with the cost of every call set on its Completed
// response's Usage: priced as the model that answered, else as fallback,
// the model the profile asked for. A model neither names in prices keeps
// a cost of 0, which means unknown.
func WithPrices(p Provider, prices Prices, fallback string) Provider {
	return &priced{Provider: p, prices: prices, fallback: fallback}
}

type priced struct {
	Provider
	prices   Prices
	fallback string
}

func (p *priced) Stream(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	seq := p.Provider.Stream(ctx, req)
	return func(yield func(Event, error) bool) {
		for ev, err := range seq {
			if c, ok := ev.(Completed); ok {
				c.Response.Usage.Cost = 0
				if pr, ok := p.price(c.Response.Model); ok {
					c.Response.Usage.Cost = pr.Cost(c.Response.Usage)
				}
				ev = c
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

func (p *priced) price(answered string) (Price, bool) {
	if answered != "" {
		if pr, ok := p.prices.Lookup(answered); ok {
			return pr, true
		}
	}
	return p.prices.Lookup(p.fallback)
}

// Unwrap returns the provider p prices.
func (p *priced) Unwrap() Provider { return p.Provider }
