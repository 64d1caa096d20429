package cli_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// One MCP tool whose inputSchema is not a JSON Schema object does not take
// the turn down: it is left out with a notice naming server and tool, and
// the server's other tools are offered and run. A server that cannot
// start says why on stderr without -v, and never its command line.
func TestOneshotMCPBadSchemaAndWhy(t *testing.T) {
	server := mcpTestServer(t)
	srv := scripted(t, `[
	 {"tool_calls":[{"id":"c1","name":"mcp__raw__good","arguments":{"x":"y"}}]},
	 {"text":"done"}]`)
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf(`
[mcp.servers.raw]
command = %q
env = { MCPTEST_TOOLS = '[{"name":"good","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}},{"name":"bad","inputSchema":true}]' }
permission = "read"

[mcp.servers.dead]
command = "/nonexistent/mcp-server"
`, server))
	out, errOut, code := run(t, t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k"), "--config", cfg, "--oneshot", "use the tools")
	if code != 0 || out != "done\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	for _, want := range []string{
		"meka: warning: MCP tool bad of server raw is left out: its inputSchema is not a JSON Schema object (it is a boolean)",
		"meka: warning: MCP server dead failed to start: its command was not found",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %q", want, errOut)
		}
	}
	if strings.Contains(errOut, "/nonexistent") || strings.Contains(errOut, server) {
		t.Errorf("stderr names a command line: %q", errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; stderr %q", len(reqs), errOut)
	}
	if !bytes.Contains(reqs[0].Body, []byte(`"mcp__raw__good"`)) || bytes.Contains(reqs[0].Body, []byte(`mcp__raw__bad`)) {
		t.Errorf("first request's tools: %s", reqs[0].Body)
	}
	if !bytes.Contains(reqs[1].Body, []byte("good ran")) {
		t.Errorf("second request lacks the tool's result: %s", reqs[1].Body)
	}
}
