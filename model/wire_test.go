package model

import (
	"encoding/json"
	"testing"
	"time"
)

func TestToolArguments(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "{}"},
		{"  \n", "{}"},
		{`{"path":"a.go"}`, `{"path":"a.go"}`},
		{` {"n":1} `, `{"n":1}`},
		{`{"path":`, `"{\"path\":"`},
	} {
		if got := string(ToolArguments(tc.in)); got != tc.want {
			t.Errorf("ToolArguments(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a":[1,2]}`, `{"a":`, "\xff", "null"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ToolArguments(s)
		if !json.Valid(got) {
			t.Fatalf("ToolArguments(%q) = %q, not JSON", s, got)
		}
		// Whatever it returns must survive being stored in a ToolCall.
		if _, err := MarshalPart(ToolCall{ID: "c", Name: "n", Arguments: got}); err != nil {
			t.Fatalf("marshal call with %q: %v", got, err)
		}
	})
}

func TestResourcePromptText(t *testing.T) {
	for _, tc := range []struct {
		r    Resource
		want string
	}{
		{Resource{URI: "file:///a.go", Text: "package a"}, `<resource uri="file:///a.go">package a</resource>`},
		{Resource{URI: "file:///a.md", MimeType: "text/markdown", Text: "# A"}, `<resource uri="file:///a.md" mime="text/markdown"># A</resource>`},
		{Resource{URI: "https://x.test/?a=1&b=2", Name: "x"}, `<resource_link name="x" uri="https://x.test/?a=1&amp;b=2"></resource_link>`},
	} {
		if got := tc.r.PromptText(); got != tc.want {
			t.Errorf("PromptText() = %s, want %s", got, tc.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"2", 2 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{"-1", 0},
		{"soon", 0},
		{"Sun, 01 Mar 2026 12:00:07 GMT", 7 * time.Second},
		{"Sun, 01 Mar 2026 11:59:00 GMT", 0},
		{"1e300", time.Duration(1<<63 - 1).Truncate(time.Second)},
	} {
		if got := ParseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
