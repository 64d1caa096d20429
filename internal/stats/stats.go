// Package stats is `meka stats`: the tokens and cost the log records,
// grouped by session, project, day or model, read from either SQL store
// by one aggregate query (the store does the adding; nothing here reads
// rows).
package stats

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"meka.dev/meka/internal/storerec"
)

// Source is a store that adds up its spend: *sqlite.DB and *postgres.DB.
type Source interface {
	Spend(ctx context.Context, q storerec.SpendQuery) ([]storerec.SpendGroup, error)
}

// Bys are the groupings, the default first.
var Bys = []string{storerec.SpendByDay, storerec.SpendBySession, storerec.SpendByProject, storerec.SpendByModel}

// Options say what to count.
type Options struct {
	// Since bounds the calls counted; zero counts every one.
	Since time.Time
	// By is one of Bys; empty means by day.
	By string
	// Location is where days begin; nil means UTC.
	Location *time.Location
	// Now is the clock, for the day offset; nil means time.Now.
	Now func() time.Time
}

// Group is one line of the report.
type Group struct {
	Key        string  `json:"key"`
	Title      string  `json:"title,omitempty"`
	Calls      int64   `json:"calls"`
	Input      int64   `json:"input_tokens"`
	Cached     int64   `json:"cached_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	Output     int64   `json:"output_tokens"`
	Cost       float64 `json:"cost"`
}

// Report is what Run found.
type Report struct {
	By     string  `json:"by"`
	Since  string  `json:"since,omitempty"`
	Groups []Group `json:"groups"`
	Total  Group   `json:"total"`
}

// Run asks src for its spend.
func Run(ctx context.Context, src Source, o Options) (*Report, error) {
	if o.By == "" {
		o.By = storerec.SpendByDay
	}
	if !slices.Contains(Bys, o.By) {
		return nil, fmt.Errorf("stats: cannot group by %q (want session, project, day or model)", o.By)
	}
	loc := o.Location
	if loc == nil {
		loc = time.UTC
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	_, offset := now().In(loc).Zone()
	gs, err := src.Spend(ctx, storerec.SpendQuery{Since: o.Since, By: o.By, Offset: offset})
	if err != nil {
		return nil, err
	}
	r := &Report{By: o.By, Groups: make([]Group, 0, len(gs)), Total: Group{Key: "total"}}
	if !o.Since.IsZero() {
		r.Since = o.Since.In(loc).Format(time.RFC3339)
	}
	for _, g := range gs {
		key := g.Key
		if o.By == storerec.SpendByDay {
			if n, err := strconv.ParseInt(key, 10, 64); err == nil {
				key = time.Unix(n*86400, 0).UTC().Format(time.DateOnly)
			}
		}
		if key == "" && o.By != storerec.SpendBySession {
			key = "(none)"
		}
		out := Group{Key: key, Title: g.Label, Calls: g.Calls, Input: g.Input, Cached: g.CacheRead, CacheWrite: g.CacheWrite, Output: g.Output, Cost: g.Cost}
		r.Groups = append(r.Groups, out)
		r.Total.Calls += out.Calls
		r.Total.Input += out.Input
		r.Total.Cached += out.Cached
		r.Total.CacheWrite += out.CacheWrite
		r.Total.Output += out.Output
		r.Total.Cost += out.Cost
	}
	return r, nil
}

// ParseSince reads --since: a date (YYYY-MM-DD, midnight in loc) or an
// RFC 3339 time.
func ParseSince(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a date such as 2026-08-01, or an RFC 3339 time", s)
}

// WriteJSON writes r as one JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r as a table, a total last. Costs are estimates from
// the prices in force when each call was made; a call without a price
// adds tokens and no cost.
func WriteText(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tcalls\tinput\tcached\tcache write\toutput\tcost (USD)\t\n", r.By)
	line := func(g Group) {
		key := g.Key
		if g.Title != "" {
			key += "  " + g.Title
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.4f\t\n", key, g.Calls, g.Input, g.Cached, g.CacheWrite, g.Output, g.Cost)
	}
	for _, g := range r.Groups {
		line(g)
	}
	line(r.Total)
	return tw.Flush()
}
