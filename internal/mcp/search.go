package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Tool search modes (config's [mcp] tool_search).
const (
	SearchAuto   = "auto"
	SearchAlways = "always"
	SearchNever  = "never"
)

// SearchToolName is the tool the model finds MCP tools with.
const SearchToolName = "tool_search"

// searchLimit bounds the matches one search returns (and offers).
const searchLimit = 5

// Searched wraps a source of MCP tools so that, once their schemas pass
// the budget (or always), the model is sent tool_search instead of them,
// and then only the tools its searches found. Which were found is the
// log's to say: the host's fold calls Found for every accepted search
// and Reset on a replay, so resume and fork offer the same set.
type Searched struct {
	inner  tool.Source
	mode   string
	budget int

	mu    sync.Mutex // guards found
	found []string   // names, in the order they were found
	gen   atomic.Uint64
}

// NewSearched wraps inner; mode is SearchAuto, SearchAlways or
// SearchNever, budget the schema bytes auto sends whole.
func NewSearched(inner tool.Source, mode string, budget int) *Searched {
	return &Searched{inner: inner, mode: mode, budget: budget}
}

// Reset forgets every tool found (a replay from an empty log).
func (s *Searched) Reset() { s.Set(nil) }

// Set replaces the tools found (a checkpoint restored).
func (s *Searched) Set(names []string) {
	s.mu.Lock()
	s.found = slices.Clone(names)
	s.mu.Unlock()
	s.gen.Add(1)
}

// Found adds the names a search returned.
func (s *Searched) Found(names []string) {
	s.mu.Lock()
	added := false
	for _, n := range names {
		if !slices.Contains(s.found, n) {
			s.found = append(s.found, n)
			added = true
		}
	}
	s.mu.Unlock()
	if added {
		s.gen.Add(1)
	}
}

// FoundNames returns the names found so far.
func (s *Searched) FoundNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.found)
}

// Version moves with the inner source and with every change of what was
// found.
func (s *Searched) Version() uint64 { return s.inner.Version()<<24 ^ s.gen.Load() }

// Tools are the inner tools whole, or tool_search and the ones found.
func (s *Searched) Tools() []tool.Tool {
	all := s.inner.Tools()
	if !s.searching(all) {
		return all
	}
	s.mu.Lock()
	found := slices.Clone(s.found)
	s.mu.Unlock()
	out := []tool.Tool{&searchTool{all: all}}
	for _, t := range all {
		if slices.Contains(found, t.Spec().Name) {
			out = append(out, t)
		}
	}
	return out
}

func (s *Searched) searching(all []tool.Tool) bool {
	switch s.mode {
	case SearchNever:
		return false
	case SearchAlways:
		return len(all) > 0
	}
	return SchemaBytes(all) > s.budget
}

// SchemaBytes is what tools' definitions weigh in a request: names,
// descriptions and schemas.
func SchemaBytes(tools []tool.Tool) int {
	n := 0
	for _, t := range tools {
		sp := t.Spec()
		n += len(sp.Name) + len(sp.Description) + len(sp.Schema)
	}
	return n
}

// SearchState is what a tool_search result records: the names it found,
// which the host's fold offers from the next request on.
type SearchState struct {
	Found []string `json:"found"`
}

type searchTool struct{ all []tool.Tool }

const searchSchema = `{"type":"object","properties":{"query":{"type":"string","description":"words naming what the tool should do, such as \"create a github issue\" or \"read a web page\""}},"required":["query"],"additionalProperties":false}`

func (t *searchTool) Spec() tool.Spec {
	return tool.Spec{Name: SearchToolName, Schema: json.RawMessage(searchSchema), Level: permission.Read, Kind: tool.KindSearch,
		ParallelSafe: true, Bookkeeping: true,
		Description: fmt.Sprintf("Find tools of the %d connected MCP servers' tools that are not offered yet: ranks them by name and description and offers the best %d from your next request on.", len(t.all), searchLimit)}
}

func (t *searchTool) Run(_ context.Context, c tool.Call) (tool.Result, error) {
	var args struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(c.Arguments, &args); err != nil || strings.TrimSpace(args.Query) == "" {
		return tool.Errorf("tool_search needs a query: words naming what the tool should do"), nil
	}
	docs := make([]string, len(t.all))
	for i, tl := range t.all {
		sp := tl.Spec()
		docs[i] = sp.Name + " " + sp.Description
	}
	ranked := Rank(args.Query, docs, searchLimit)
	if len(ranked) == 0 {
		return tool.Text("No MCP tool matches " + fmt.Sprintf("%q", args.Query) + "; try other words."), nil
	}
	var b strings.Builder
	b.WriteString("These tools are offered from your next request on:\n")
	st := SearchState{}
	for _, i := range ranked {
		sp := t.all[i].Spec()
		st.Found = append(st.Found, sp.Name)
		fmt.Fprintf(&b, "- %s: %s\n", sp.Name, firstSentence(sp.Description))
	}
	r := tool.Text(strings.TrimSuffix(b.String(), "\n"))
	r.State, _ = json.Marshal(st)
	return r, nil
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Rank orders docs by BM25 relevance to query and returns the indexes of
// at most limit that score at least half the best, best first (ties in
// doc order).
func Rank(query string, docs []string, limit int) []int {
	const k1, b = 1.2, 0.75
	q := tokens(query)
	if len(q) == 0 || len(docs) == 0 {
		return nil
	}
	tf := make([]map[string]int, len(docs))
	df := map[string]int{}
	total := 0
	for i, d := range docs {
		tf[i] = map[string]int{}
		ts := tokens(d)
		total += len(ts)
		for _, w := range ts {
			if tf[i][w] == 0 {
				df[w]++
			}
			tf[i][w]++
		}
	}
	avg := float64(total) / float64(len(docs))
	type scored struct {
		i int
		s float64
	}
	var out []scored
	for i := range docs {
		dl := 0
		for _, n := range tf[i] {
			dl += n
		}
		score := 0.0
		for _, w := range q {
			f := float64(tf[i][w])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (float64(len(docs))-float64(df[w])+0.5)/(float64(df[w])+0.5))
			score += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(dl)/avg))
		}
		if score > 0 {
			out = append(out, scored{i, score})
		}
	}
	sort.SliceStable(out, func(a, c int) bool { return out[a].s > out[c].s })
	// A match far weaker than the best shares a common word with the
	// query, not its subject: offering it would cost its schema for
	// nothing.
	for i, o := range out {
		if o.s < out[0].s/2 {
			out = out[:i]
			break
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	idx := make([]int, len(out))
	for i, s := range out {
		idx[i] = s.i
	}
	return idx
}

// tokens splits text into lower-case words at anything not a letter or
// digit, so mcp__github__create_issue is "mcp github create issue", and
// drops a plural s so "issues" finds "issue".
func tokens(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	out := f[:0]
	for _, w := range f {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		out = append(out, w)
	}
	return out
}
