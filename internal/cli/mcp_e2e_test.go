package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

var (
	mcpServerOnce sync.Once
	mcpServerPath string
	mcpServerErr  error
)

// mcpTestServer builds the in-repo MCP test server once per run.
func mcpTestServer(t *testing.T) string {
	t.Helper()
	mcpServerOnce.Do(func() {
		bin := mekaBinary(t) // shares its temporary directory, removed by TestMain
		mcpServerPath = filepath.Join(filepath.Dir(bin), "mcptestserver")
		out, err := exec.Command("go", "build", "-o", mcpServerPath, "meka.dev/meka/internal/mcp/mcptest/mcptestserver").CombinedOutput()
		if err != nil {
			mcpServerErr = &buildError{out: string(out), err: err}
		}
	})
	if mcpServerErr != nil {
		t.Fatal(mcpServerErr)
	}
	return mcpServerPath
}

// mcpConfig writes a config with one scripted-model profile served by srv
// and the given [mcp] tables, and returns its path.
func mcpConfig(t *testing.T, srvURL, mcpTables string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := fmt.Sprintf("[profiles.m]\nprovider = \"openai\"\nbase_url = %q\napi_key_env = \"OPENAI_API_KEY\"\n\n%s", srvURL+"/v1", mcpTables)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func scripted(t *testing.T, rounds string) *modeltest.Server {
	t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.NewServer(t, s)
}

// The model calls MCP tools and the next request carries their results;
// a failing tool is a failed result; the permission chain refuses an
// unannotated tool at the default level; a server that never starts and
// one that never answers cost a notice naming them, and the rest work.
func TestOneshotMCPTools(t *testing.T) {
	server := mcpTestServer(t)
	srv := scripted(t, `[
	 {"tool_calls":[
	   {"id":"c1","name":"mcp__t__echo","arguments":{"text":"hi"}},
	   {"id":"c2","name":"mcp__t__fail","arguments":{}},
	   {"id":"c3","name":"mcp__t__write","arguments":{"path":"x"}}]},
	 {"text":"done"}]`)
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf(`
[mcp.servers.t]
command = %q
tool_permissions = { fail = "read" }

[mcp.servers.dead]
command = "/nonexistent/mcp-server"

[mcp.servers.silent]
command = %q
env = { MCPTEST_SILENT = "1" }
startup_timeout = "1s"
`, server, server))
	env := isolatedEnv(t, "OPENAI_API_KEY=k")
	out, errOut, code := run(t, t.TempDir(), env, "--config", cfg, "--oneshot", "use the tools")
	if code != 0 || out != "done\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	for _, want := range []string{"[meka warn] MCP server dead failed to start", "[meka warn] MCP server silent failed to start"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %q", want, errOut)
		}
	}
	if strings.Contains(errOut, "/nonexistent") || strings.Contains(errOut, server) {
		t.Errorf("stderr names a command line: %q", errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !bytes.Contains(reqs[0].Body, []byte(`"mcp__t__echo"`)) || bytes.Contains(reqs[0].Body, []byte(`mcp__dead__`)) {
		t.Errorf("first request's tools: %s", reqs[0].Body)
	}
	for _, want := range []string{"echo: hi", "the widget is broken", "mcp__t__write was refused: it needs the unrestricted permission level"} {
		if !bytes.Contains(reqs[1].Body, []byte(want)) {
			t.Errorf("second request lacks %q: %s", want, reqs[1].Body)
		}
	}
}

// A required server that does not start fails --oneshot before any turn.
func TestOneshotRequiredMCPServer(t *testing.T) {
	srv := scripted(t, `[{"text":"never"}]`)
	cfg := mcpConfig(t, srv.URL, `
[mcp.servers.dead]
command = "/nonexistent/mcp-server"
required = true
`)
	out, errOut, code := run(t, t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k"), "--config", cfg, "--oneshot", "x")
	if code != 1 || out != "" || !strings.Contains(errOut, "required MCP server did not start: dead") {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}
