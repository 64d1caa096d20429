package tool_test

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"meka.dev/meka/tool"
)

// changing is a Source whose set a test replaces.
type changing struct {
	v     atomic.Uint64
	tools atomic.Pointer[[]tool.Tool]
}

func (c *changing) Version() uint64 { return c.v.Load() }
func (c *changing) Tools() []tool.Tool {
	if p := c.tools.Load(); p != nil {
		return *p
	}
	return nil
}
func (c *changing) set(ts ...tool.Tool) { c.tools.Store(&ts); c.v.Add(1) }

func named(name, schema string) tool.Tool {
	return specTool{tool.Spec{Name: name, Schema: json.RawMessage(schema), ServerValidated: true}}
}

func TestRegistrySource(t *testing.T) {
	src := &changing{}
	src.set(named("mcp__s__a", `{"type":"object"}`), named("file_write", `{"type":"object"}`),
		named("mcp__s__hidden", `{"type":"object"}`))
	r := tool.NewRegistry("mcp__s__hidden")
	if err := r.Add(writeTool); err != nil {
		t.Fatal(err)
	}
	var skipped []string
	r.AddSource(src, func(name string, err error) { skipped = append(skipped, name+": "+err.Error()) })
	if got := r.Names(); !slices.Equal(got, []string{"file_write", "mcp__s__a"}) {
		t.Fatalf("names = %v", got)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "file_write: add tool file_write: already registered") {
		t.Fatalf("skipped = %v", skipped)
	}
	v := r.Version()
	// A schema the validator cannot express passes through when its
	// server validates; the set moves and the version with it.
	src.set(named("mcp__s__b", `{"type":"object","$defs":{}}`))
	if r.Version() == v {
		t.Fatal("version did not move")
	}
	if got := r.Names(); !slices.Equal(got, []string{"file_write", "mcp__s__b"}) {
		t.Fatalf("names = %v", got)
	}
	if err := r.Validate("mcp__s__b", json.RawMessage(`{"anything":1}`)); err != nil {
		t.Fatalf("passed-through schema: %v", err)
	}
	if err := r.Validate("mcp__s__b", json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	// A built-in tool's schema is still refused.
	if err := r.Add(specTool{tool.Spec{Name: "x", Schema: json.RawMessage(`{"$defs":{}}`)}}); err == nil {
		t.Fatal("a built-in schema the validator cannot express was accepted")
	}
}
