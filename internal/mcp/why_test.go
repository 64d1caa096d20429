package mcp_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/mcp/mcptest"
	"meka.dev/meka/tool"
)

// rawTools is a server listing one good tool and four whose inputSchema
// no provider takes.
const rawTools = `[
 {"name":"good","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}},
 {"name":"bad","inputSchema":"nope"},
 {"name":"yes","inputSchema":true},
 {"name":"list","inputSchema":[1,2]},
 {"name":"str","inputSchema":{"type":"string"}}]`

// A tool whose inputSchema is not a JSON Schema object is left out with
// a notice naming server and tool, once; the server's other tools are
// offered and run, and a request offering them can be built.
func TestBadInputSchemaLeftOut(t *testing.T) {
	raw := stdio("raw")
	raw.Env = map[string]string{"MCPTEST_TOOLS": rawTools}
	m, n := start(t, mcp.Options{Servers: []mcp.Server{raw}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	if got := r.Names(); !slices.Equal(got, []string{"mcp__raw__good"}) {
		t.Fatalf("offered %v", got)
	}
	n.waitFor(t, "MCP tool bad of server raw is left out: its inputSchema is not a JSON Schema object (it is a string)")
	n.waitFor(t, "MCP tool yes of server raw is left out: its inputSchema is not a JSON Schema object (it is a boolean)")
	n.waitFor(t, "MCP tool list of server raw is left out: its inputSchema is not a JSON Schema object (it is an array)")
	n.waitFor(t, `MCP tool str of server raw is left out: its inputSchema is not a JSON Schema object: its type is "string", not "object"`)
	if res, err := call(t, r, "mcp__raw__good", `{"x":"y"}`); err != nil || text(res) != "good ran" {
		t.Fatalf("good = %q, %v", text(res), err)
	}
}

// A session that recorded such a tool before it was left out is not
// offered it either: the record's copy would fail every request.
func TestBadInputSchemaRecordedLeftOut(t *testing.T) {
	m := mcp.New(mcp.Options{})
	var rec mcp.Record
	rec.Set([]mcp.Def{
		{Name: "mcp__s__bad", Server: "s", Remote: "bad", Schema: json.RawMessage(`true`)},
		{Name: "mcp__s__good", Server: "s", Remote: "good", Schema: json.RawMessage(`{"type":"object"}`)},
	})
	r := tool.NewRegistry()
	r.AddSource(m.RecordedSource(&mcp.Binding{}, &rec), func(name string, err error) { t.Errorf("skipped %s: %v", name, err) })
	if got := r.Names(); !slices.Equal(got, []string{"mcp__s__good"}) {
		t.Fatalf("offered %v", got)
	}
}

// A server that fails to start says why in its notice, without -v and
// without its command line; a call of a tool of a server that failed says
// why too.
func TestStartFailuresSayWhy(t *testing.T) {
	missing := mcp.Server{Name: "missing", Command: "/nonexistent/secret-token-path/server"}
	exits := stdio("exits")
	exits.Args = []string{"--token=hunter22"}
	exits.Env = map[string]string{"MCPTEST_EXIT": "3:boom: no API key given (--token=hunter22)"}
	refused := mcp.Server{Name: "refused", URL: "http://127.0.0.1:1/mcp?key=hunter22"}
	denied := mcp.Server{Name: "denied", URL: httpServer(t, mcptest.Options{}), Headers: map[string]string{"Authorization": "Bearer hunter22"}}
	m, n := start(t, mcp.Options{Servers: []mcp.Server{missing, exits, refused, denied}, MinBackoff: 1 << 62})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	n.waitFor(t, "MCP server missing failed to start: its command was not found")
	n.waitFor(t, `MCP server exits failed to start: it closed the connection; its stderr ends "boom: no API key given (…)"`)
	n.waitFor(t, "MCP server refused failed to start: the connection was refused")
	n.waitFor(t, "MCP server denied failed to start: it answered HTTP 401 Unauthorized")
	for _, x := range n.all {
		for _, secret := range []string{"hunter22", "/nonexistent", serverBin} {
			if strings.Contains(x, secret) {
				t.Errorf("notice %q carries %q", x, secret)
			}
		}
	}
	for _, st := range m.Status() {
		if st.State != mcp.StateFailed || st.Reason == "" {
			t.Errorf("status %+v", st)
		}
	}
	var rec mcp.Record
	rec.Set([]mcp.Def{{Name: "mcp__missing__x", Server: "missing", Remote: "x", Schema: json.RawMessage(`{"type":"object"}`)}})
	r := tool.NewRegistry()
	r.AddSource(m.RecordedSource(&mcp.Binding{}, &rec), func(string, error) {})
	tl, _ := r.Get("mcp__missing__x")
	_, err := tl.Run(t.Context(), tool.Call{Name: "mcp__missing__x", Arguments: json.RawMessage(`{}`)})
	if !errors.Is(err, tool.ErrUnavailable) || !strings.Contains(err.Error(), "not connected (it failed to start: its command was not found)") {
		t.Fatalf("call: %v", err)
	}
}
