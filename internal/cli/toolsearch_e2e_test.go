package cli_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// Tool search against MCP servers from npm: with tool_search = "always"
// the first request offers tool_search and the built-in tools but no
// server's tool; the search's matches are offered from the next request
// on, their calls run, and a resumed session (-c) offers them again from
// its log.
func TestOneshotNPMToolSearch(t *testing.T) {
	dir := npmServers(t)
	work := t.TempDir()
	srv := scripted(t, `[
	 {"tool_calls":[{"id":"s1","name":"tool_search","arguments":{"query":"echo a message back"}}]},
	 {"tool_calls":[{"id":"c1","name":"mcp__every__echo","arguments":{"message":"ping"}}]},
	 {"text":"done"},
	 {"text":"again"}]`)
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf(`
[mcp]
tool_search = "always"

[mcp.servers.every]
command = "node"
args = [%q, "stdio"]
startup_timeout = "60s"

[mcp.servers.fs]
command = "node"
args = [%q, %q]
startup_timeout = "60s"
`, filepath.Join(dir, "server-everything", "dist", "index.js"), filepath.Join(dir, "server-filesystem", "dist", "index.js"), work))
	env := isolatedEnv(t, "OPENAI_API_KEY=k")
	out, errOut, code := run(t, work, env, "--config", cfg, "--permission", "unrestricted", "--oneshot", "say ping")
	if code != 0 || out != "done\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	out, errOut, code = run(t, work, env, "--config", cfg, "--permission", "unrestricted", "-c", "--oneshot", "once more")
	if code != 0 || out != "again\n" {
		t.Fatalf("resumed: code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests; stderr %q", len(reqs), errOut)
	}
	has := func(i int, s string) bool { return bytes.Contains(reqs[i].Body, []byte(s)) }
	if !has(0, `"tool_search"`) || !has(0, `"file_read"`) || has(0, `"mcp__every__echo"`) || has(0, `"mcp__fs__read_text_file"`) {
		t.Errorf("the first request offers the servers' tools, or lacks tool_search or a built-in tool")
	}
	if !has(1, `- mcp__every__echo`) || !has(1, `"name":"mcp__every__echo"`) && !has(1, `"name": "mcp__every__echo"`) {
		t.Errorf("the search's match is not offered in the next request: %s", reqs[1].Body)
	}
	if has(1, `"mcp__fs__read_text_file"`) {
		t.Errorf("a tool nobody searched for is offered: %s", reqs[1].Body)
	}
	if !has(2, "Echo: ping") {
		t.Error("the found tool's call did not run")
	}
	if !has(3, `"mcp__every__echo"`) || has(3, `"mcp__fs__read_text_file"`) {
		t.Error("a resumed session does not offer what its log found")
	}
}

// BenchmarkToolSearchRequestBytes measures the first request's bytes
// with five MCP servers from npm configured (server-everything three
// times, server-filesystem twice), their tools sent whole (never) and
// found through tool_search (always). Run with -benchtime=1x: each
// iteration starts five node servers.
func BenchmarkToolSearchRequestBytes(b *testing.B) {
	for _, mode := range []string{"never", "always"} {
		b.Run(mode, func(b *testing.B) {
			dir := npmServers(b)
			work := b.TempDir()
			every := filepath.Join(dir, "server-everything", "dist", "index.js")
			fs := filepath.Join(dir, "server-filesystem", "dist", "index.js")
			tables := fmt.Sprintf("[mcp]\ntool_search = %q\n", mode)
			for i := range 3 {
				tables += fmt.Sprintf("\n[mcp.servers.every%d]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\nstartup_timeout = \"60s\"\n", i, every)
			}
			for i := range 2 {
				tables += fmt.Sprintf("\n[mcp.servers.fs%d]\ncommand = \"node\"\nargs = [%q, %q]\nstartup_timeout = \"60s\"\n", i, fs, work)
			}
			var size int
			for b.Loop() {
				srv := scripted(b, `[{"text":"done"}]`)
				cfg := mcpConfig(b, srv.URL, tables)
				run(b, work, isolatedEnv(b, "OPENAI_API_KEY=k"), "--config", cfg, "--oneshot", "hi")
				reqs := srv.Requests()
				if len(reqs) != 1 {
					b.Fatalf("%d requests", len(reqs))
				}
				size = len(reqs[0].Body)
			}
			b.ReportMetric(float64(size), "request-bytes")
		})
	}
}
