package cli_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
func mcpConfig(t testing.TB, srvURL, mcpTables string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := fmt.Sprintf("[profiles.m]\nprovider = \"openai\"\nbase_url = %q\napi_key_env = \"OPENAI_API_KEY\"\n\n%s", srvURL+"/v1", mcpTables)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func scripted(t testing.TB, rounds string) *modeltest.Server {
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
	for _, want := range []string{"meka: warning: MCP server dead failed to start", "meka: warning: MCP server silent failed to start"} {
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

// npmServers returns the directory of the MCP servers from npm
// (internal/mcp/testdata/servers, installed by .ci/run). Without them the
// test is skipped, except under CI, where it fails.
func npmServers(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "mcp", "testdata", "servers", "node_modules", "@modelcontextprotocol"))
	if err != nil {
		t.Fatal(err)
	}
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "server-everything")); err != nil {
		why = "the MCP servers are not installed; run `npm ci --prefix internal/mcp/testdata/servers`"
	}
	if why != "" {
		if os.Getenv("CI") != "" || os.Getenv("MEKA_CI") != "" {
			t.Fatalf("the npm MCP server tests cannot run under CI: %s", why)
		}
		t.Skip(why)
	}
	return dir
}

// startEverythingHTTP runs server-everything over streamable HTTP on a
// free 127.0.0.1 port and returns its endpoint once it says it listens.
func startEverythingHTTP(t *testing.T, dir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(dir, "server-everything", "dist", "index.js"), "streamableHttp")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + strconv.Itoa(port), "HOST=127.0.0.1"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "listening on port") {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
		}
	}
	t.Fatalf("server-everything did not start: %v", sc.Err())
	return ""
}

// Real MCP servers nobody on meka wrote, from npm: server-everything over
// stdio and over streamable HTTP, server-filesystem over stdio. The model
// calls their tools and the next request carries the results: text, an
// image (the profile reads images), a directory listing, and an
// elicitation declined because nobody is attached to a one-shot run.
func TestOneshotNPMServers(t *testing.T) {
	dir := npmServers(t)
	url := startEverythingHTTP(t, dir)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := scripted(t, fmt.Sprintf(`[
	 {"tool_calls":[
	   {"id":"c1","name":"mcp__every__echo","arguments":{"message":"ping"}},
	   {"id":"c2","name":"mcp__every__get-tiny-image","arguments":{}},
	   {"id":"c3","name":"mcp__fs__list_directory","arguments":{"path":%q}},
	   {"id":"c4","name":"mcp__web__get-sum","arguments":{"a":2,"b":3}},
	   {"id":"c5","name":"mcp__every__trigger-elicitation-request","arguments":{}}]},
	 {"text":"done"}]`, work))
	// The servers' schemas exceed tool search's budget; this test is of
	// tools offered whole (tool search has tests of its own).
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf(`
[mcp]
tool_search = "never"

[mcp.servers.every]
command = "node"
args = [%q, "stdio"]
startup_timeout = "60s"

[mcp.servers.fs]
command = "node"
args = [%q, %q]
startup_timeout = "60s"

[mcp.servers.web]
url = %q
startup_timeout = "60s"
`, filepath.Join(dir, "server-everything", "dist", "index.js"), filepath.Join(dir, "server-filesystem", "dist", "index.js"), work, url))
	env := isolatedEnv(t, "OPENAI_API_KEY=k")
	out, errOut, code := run(t, work, env, "--config", cfg, "--permission", "unrestricted", "--oneshot", "use the servers")
	if code != 0 || out != "done\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests; stderr %q", len(reqs), errOut)
	}
	for _, want := range []string{`"mcp__every__echo"`, `"mcp__fs__read_text_file"`, `"mcp__web__get-sum"`} {
		if !bytes.Contains(reqs[0].Body, []byte(want)) {
			t.Errorf("the first request does not offer %s", want)
		}
	}
	for _, want := range []string{"Echo: ping", "hello.txt", "The sum of 2 and 3 is 5.", "data:image/png;base64,", "decline"} {
		if !bytes.Contains(reqs[1].Body, []byte(want)) {
			t.Errorf("the second request lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("second request: %s\nstderr: %s", reqs[1].Body, errOut)
	}
}

// A server that dies mid-session comes back: the call it died in fails as
// unavailable, the next one waits out the reconnection and runs.
func TestOneshotMCPServerDiesAndComesBack(t *testing.T) {
	server := mcpTestServer(t)
	srv := scripted(t, `[
	 {"tool_calls":[{"id":"c1","name":"mcp__t__die","arguments":{}}]},
	 {"tool_calls":[{"id":"c2","name":"mcp__t__echo","arguments":{"text":"back"}}]},
	 {"text":"done"}]`)
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf("[mcp.servers.t]\ncommand = %q\n", server))
	out, errOut, code := run(t, t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k"), "--config", cfg, "--permission", "unrestricted", "--oneshot", "x")
	if code != 0 || out != "done\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !bytes.Contains(reqs[1].Body, []byte("the MCP server t disconnected during the call")) ||
		!bytes.Contains(reqs[2].Body, []byte("echo: back")) {
		t.Fatalf("requests: %d; stderr %q", len(reqs), errOut)
	}
	if !strings.Contains(errOut, "meka: warning: MCP server t disconnected; reconnecting") {
		t.Errorf("stderr %q", errOut)
	}
}
