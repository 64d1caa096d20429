package tool

import (
	"context"
	"encoding/json"
	"testing"
)

type cachedTool struct{ spec Spec }

func (c cachedTool) Spec() Spec                                { return c.spec }
func (c cachedTool) Run(context.Context, Call) (Result, error) { return Text(""), nil }

// TestSessionsShareCompiledSchemas: two registries (two sessions) given
// the same schema text share one compiled schema, which validates for
// both; a text that does not compile fails in each.
func TestSessionsShareCompiledSchemas(t *testing.T) {
	good := cachedTool{Spec{Name: "grep", Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","pattern":"^a"}},"required":["q"]}`)}}
	bad := cachedTool{Spec{Name: "odd", Schema: json.RawMessage(`{"type":"object","unknownKeyword":1}`)}}
	a, b := NewRegistry(), NewRegistry()
	for _, r := range []*Registry{a, b} {
		if err := r.Add(good); err != nil {
			t.Fatal(err)
		}
		if err := r.Add(bad); err == nil {
			t.Fatal("a schema with an unknown keyword was added")
		}
	}
	if a.schemas["grep"] == nil || a.schemas["grep"] != b.schemas["grep"] {
		t.Fatalf("each registry compiled its own schema: %p, %p", a.schemas["grep"], b.schemas["grep"])
	}
	for _, args := range []string{`{"q":"abc"}`, `{"q":"xyz"}`, `{}`} {
		ea, eb := a.Validate("grep", json.RawMessage(args)), b.Validate("grep", json.RawMessage(args))
		if (ea == nil) != (eb == nil) || (ea == nil) != (args == `{"q":"abc"}`) {
			t.Errorf("%s: %v, %v", args, ea, eb)
		}
	}
}
