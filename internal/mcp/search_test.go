package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

func TestRank(t *testing.T) {
	docs := []string{
		"mcp__gh__create_issue Create a new issue in a GitHub repository",
		"mcp__gh__list_issues List the issues of a repository",
		"mcp__web__fetch Fetch a web page and return its text",
		"mcp__fs__read_text_file Read a file; detailed error messages",
	}
	if got := Rank("create a github issue", docs, 5); len(got) == 0 || got[0] != 0 {
		t.Errorf("create a github issue: %v", got)
	}
	if got := Rank("read a web page", docs, 5); len(got) == 0 || got[0] != 2 {
		t.Errorf("read a web page: %v", got)
	}
	if got := Rank("issues", docs, 1); !slices.Equal(got, []int{1}) && !slices.Equal(got, []int{0}) {
		t.Errorf("limit 1: %v", got)
	}
	if got := Rank("kubernetes", docs, 5); len(got) != 0 {
		t.Errorf("no match: %v", got)
	}
}

type fixedSource struct {
	v     atomic.Uint64
	tools []tool.Tool
}

func (f *fixedSource) Version() uint64    { return f.v.Load() }
func (f *fixedSource) Tools() []tool.Tool { return f.tools }

type namedTool struct{ spec tool.Spec }

func (n namedTool) Spec() tool.Spec { return n.spec }
func (n namedTool) Run(context.Context, tool.Call) (tool.Result, error) {
	return tool.Text("ran"), nil
}

func names(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

// auto sends the tools whole under the budget and tool_search past it;
// what a search found is offered, and its version moves.
func TestSearchedModes(t *testing.T) {
	src := &fixedSource{tools: []tool.Tool{
		namedTool{tool.Spec{Name: "mcp__a__echo", Description: "Echo the message back", Schema: json.RawMessage(`{"type":"object"}`)}},
		namedTool{tool.Spec{Name: "mcp__a__sum", Description: "Add two numbers", Schema: json.RawMessage(`{"type":"object"}`)}},
	}}
	size := SchemaBytes(src.tools)
	if got := names(NewSearched(src, SearchAuto, size).Tools()); len(got) != 2 || got[0] != "mcp__a__echo" {
		t.Errorf("auto within the budget: %v", got)
	}
	if got := names(NewSearched(src, SearchNever, 1).Tools()); len(got) != 2 {
		t.Errorf("never: %v", got)
	}
	s := NewSearched(src, SearchAuto, size-1)
	if got := names(s.Tools()); !slices.Equal(got, []string{SearchToolName}) {
		t.Fatalf("auto past the budget: %v", got)
	}
	search := s.Tools()[0]
	res, _ := search.Run(t.Context(), tool.Call{Arguments: json.RawMessage(`{"query":"add numbers"}`)})
	var st SearchState
	if err := json.Unmarshal(res.State, &st); err != nil || !slices.Equal(st.Found, []string{"mcp__a__sum"}) {
		t.Fatalf("search state %s", res.State)
	}
	if text := res.Content[0].(model.Text).Text; !strings.Contains(text, "- mcp__a__sum: Add two numbers") {
		t.Errorf("search result %q", text)
	}
	v := s.Version()
	s.Found(st.Found)
	if s.Version() == v {
		t.Error("the version did not move when a tool was found")
	}
	if got := names(s.Tools()); !slices.Equal(got, []string{SearchToolName, "mcp__a__sum"}) {
		t.Errorf("after the search: %v", got)
	}
	if got := names(NewSearched(src, SearchAlways, 1<<30).Tools()); !slices.Equal(got, []string{SearchToolName}) {
		t.Errorf("always: %v", got)
	}
	if res, _ := search.Run(t.Context(), tool.Call{Arguments: json.RawMessage(`{"query":" "}`)}); !res.IsError {
		t.Error("an empty query was not refused")
	}
}
