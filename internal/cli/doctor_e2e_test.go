package cli_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// meka doctor against an endpoint that answers, one that refuses the
// key, and a port nothing listens on; with an MCP server that starts and
// one that does not, and the language servers it would start.
func TestDoctor(t *testing.T) {
	server := mcpTestServer(t)
	gopls := filepath.Join(t.TempDir(), "gopls")
	if err := os.WriteFile(gopls, []byte("#!/bin/sh\n[ \"$1\" = version ] && echo 'golang.org/x/tools/gopls v0.99.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mcp := fmt.Sprintf("[mcp.servers.t]\ncommand = %q\n\n[mcp.servers.dead]\ncommand = \"/nonexistent/mcp-server\"\n\n"+
		"[lsp.servers.go]\ncommand = [%q]\n\n[lsp.servers.typescript]\nenabled = false\n\n[lsp.servers.python]\nenabled = false\n\n"+
		"[lsp.servers.rust]\nenabled = false\n\n[lsp.servers.c]\ncommand = [\"/nonexistent/clangd\"]\n", server, gopls)

	t.Run("answers", func(t *testing.T) {
		srv := scripted(t, `[{"text":"ok"}]`)
		cfg := mcpConfig(t, srv.URL, mcp)
		out, errOut, code := run(t, t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k"), "--config", cfg, "doctor")
		if code != 0 {
			t.Fatalf("code %d stdout:\n%s\nstderr %q", code, out, errOut)
		}
		inOrderCLI(t, out, "config    ok", cfg, "profile   ok", "m: openai", srv.URL+"/v1 (config)", "api key   ok", "$OPENAI_API_KEY is set",
			"endpoint  ok", "answered; key accepted", "sandbox", "data dir  ok", "database  ok", "SQLite", "no sessions yet",
			"mcp dead  warn", "meka runs without it", "mcp t     ok", "connected: ", "mcp__t__echo",
			"lsp       ok      go: "+gopls+", golang.org/x/tools/gopls v0.99.0", "lsp       skip    typescript: off in the config",
			"lsp       skip    python: off in the config", "lsp       skip    rust: off in the config", "lsp       warn    c: /nonexistent/clangd: not found",
			"→ check lsp.servers.c.command; meka runs without it", "All checks passed")
		reqs := srv.Requests()
		if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), `"max_tokens":1`) && !strings.Contains(string(reqs[0].Body), `"max_completion_tokens":1`) {
			t.Fatalf("requests: %d %s", len(reqs), reqs)
		}
	})

	t.Run("refuses the key", func(t *testing.T) {
		srv := scripted(t, `[{"error":{"status":401,"body":"{\"error\":{\"message\":\"Incorrect API key provided\"}}"}}]`)
		cfg := mcpConfig(t, srv.URL, "")
		out, _, code := run(t, t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k"), "--config", cfg, "doctor")
		if code != 1 {
			t.Fatalf("code %d stdout:\n%s", code, out)
		}
		inOrderCLI(t, out, "endpoint  FAIL", "HTTP 401", "Incorrect API key provided", "→ the key in $OPENAI_API_KEY was refused by "+srv.URL+"/v1",
			"1 check failed: endpoint.")
	})

	t.Run("dead port", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String()
		l.Close() // nothing listens there now
		env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+url+"/v1")
		out, _, code := run(t, t.TempDir(), env, "doctor")
		if code != 1 {
			t.Fatalf("code %d stdout:\n%s", code, out)
		}
		inOrderCLI(t, out, "config    ok", "no config file", "profile   ok", "($OPENAI_BASE_URL)", "endpoint  FAIL", "connection refused",
			"→ cannot reach "+url+"/v1", "1 check failed: endpoint.")
	})

	t.Run("no key", func(t *testing.T) {
		srv := scripted(t, `[]`)
		env := isolatedEnv(t, "ANTHROPIC_BASE_URL="+srv.URL)
		out, _, code := run(t, t.TempDir(), env, "--profile", "anthropic", "doctor")
		if code != 1 {
			t.Fatalf("code %d stdout:\n%s", code, out)
		}
		inOrderCLI(t, out, "api key   FAIL", "$ANTHROPIC_API_KEY is empty", "→ export ANTHROPIC_API_KEY=...", "endpoint  skip", "1 check failed: api key.")
		if n := len(srv.Requests()); n != 0 {
			t.Fatalf("%d requests without a key", n)
		}
	})
}

func inOrderCLI(t *testing.T, text string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", w, text)
		}
		at += i + len(w)
	}
}
