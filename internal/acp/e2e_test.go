package acp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// These tests drive the built `meka acp` with the official ACP TypeScript
// SDK client (testdata/client, installed with `npm ci` there) against a
// modeltest server, and validate every message against the schema the SDK
// ships.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mekaBinary builds cmd/meka once per test binary run.
func mekaBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meka-acp-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "meka")
		out, err := exec.Command("go", "build", "-o", binPath, "meka.dev/meka/cmd/meka").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build meka: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	if clientSkipped != "" {
		// go test hides a passing package's output in package list mode,
		// so this shows under -v and in `go test` run inside this
		// directory; under CI (MEKA_CI or CI set) the tests fail instead.
		fmt.Fprintf(os.Stderr, "\n*** SKIPPED the ACP SDK client tests: %s ***\n\n", clientSkipped)
	}
	os.Exit(code)
}

// clientSetup is the command that installs the Node client, from the
// repository root.
const clientSetup = "npm ci --no-audit --no-fund --prefix internal/acp/testdata/client"

// clientSkipped says why the SDK client tests were skipped; empty when
// they ran.
var clientSkipped string

// clientDir returns the Node client's directory. When node or the client's
// packages are missing it skips the test, saying what to run, except under
// CI (.ci/run sets MEKA_CI), where a skipped conformance test would be a
// silent hole, so it fails.
func clientDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "client"))
	if err != nil {
		t.Fatal(err)
	}
	why := ""
	if _, err := exec.LookPath("node"); err != nil {
		why = "node is not installed; install Node.js 20+, then run `" + clientSetup + "`"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		why = "the client's packages are not installed; run `" + clientSetup + "`"
	}
	if why == "" {
		return dir
	}
	if underCI() {
		t.Fatalf("the ACP SDK client tests cannot run under CI: %s", why)
	}
	clientSkipped = why
	t.Skip(why)
	return ""
}

// underCI reports whether the tests run under CI, where nothing may skip.
func underCI() bool { return os.Getenv("MEKA_CI") != "" || os.Getenv("CI") != "" }

type scenario struct {
	name   string
	rounds string
	level  string // the default permission level
	extra  string // more config
	files  map[string]string
	// projects are created (meka projects add) before the client starts.
	projects []string
	// check, when set, asserts on what the model was sent.
	check func(t *testing.T, reqs []modeltest.Recorded)
}

type report struct {
	Scenario   string   `json:"scenario"`
	Failures   []string `json:"failures"`
	Validated  int      `json:"validated"`
	Stderr     string   `json:"stderr"`
	Transcript []struct {
		From string          `json:"from"`
		Msg  json.RawMessage `json:"msg"`
	} `json:"transcript"`
}

const shellCmd = `printf 'hi\\n'; sleep 0.4; printf 'there\\n'`

var scenarios = []scenario{
	{name: "lifecycle", level: "workspace", files: map[string]string{"notes.txt": "remember the milk\n"}, rounds: `[
		{"text": "Hello from meka.", "usage": {"input_tokens": 10, "output_tokens": 5}},
		{"tool_calls": [{"id": "call_1", "name": "file_read", "arguments": {"path": "notes.txt"}}]},
		{"text": "Noted."},
		{"text": "second."},
		{"text": "forked."}]`},
	{name: "list", level: "workspace", rounds: `[]`},
	{name: "delete", level: "workspace", rounds: `[{"text": "hi"}]`},
	{name: "sysprompt", level: "workspace", rounds: `[{"text": "1"}, {"text": "2"}, {"text": "3"}, {"text": "4"}]`, check: checkSystemPrompts},
	{name: "planops", level: "workspace", extra: "[tools]\nplan = \"update_plan\"\n", rounds: `[
		{"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": {"plan": [{"step": "Write the tests", "status": "in_progress"}]}}]},
		{"tool_calls": [{"id": "p2", "name": "update_plan", "arguments": {"plan": [{"step": "Write the tests", "status": "completed"}]}}]},
		{"text": "done"},
		{"tool_calls": [{"id": "p3", "name": "update_plan", "arguments": {"plan": []}}]},
		{"text": "cleared"}]`},
	{name: "subagents", level: "read", extra: "approvals = true\n", rounds: `[
		{"tool_calls": [{"id": "sp", "name": "agent_spawn", "arguments": {"task": "write sub.txt", "description": "Writer"}}]},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "sub.txt", "content": "from the child"}}]},
		{"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "sub.txt"}}]},
		{"text": "Wrote sub.txt."},
		{"text": "The sub-agent wrote it."}]`},
	{name: "permission", level: "read", extra: "approvals = true\n", rounds: `[
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "f0.txt", "content": "x"}}]}, {"text": "0"},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "f1.txt", "content": "x"}}]}, {"text": "1"},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "f2.txt", "content": "x"}}]}, {"text": "2"},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "f3.txt", "content": "x"}}]}, {"text": "3"}]`},
	{name: "terminal", level: "unrestricted", rounds: `[
		{"tool_calls": [{"id": "sh", "name": "shell_execute", "arguments": {"command": "` + shellCmd + `"}}]}, {"text": "ran"}]`},
	{name: "console", level: "unrestricted", rounds: `[
		{"tool_calls": [{"id": "sh", "name": "shell_execute", "arguments": {"command": "` + shellCmd + `"}}]}, {"text": "ran"}]`},
	{name: "fs", level: "workspace", rounds: `[
		{"tool_calls": [{"id": "e1", "name": "file_edit", "arguments": {"path": "proj/a.txt", "old": "buffer", "new": "edited"}}]}, {"text": "1"},
		{"tool_calls": [{"id": "e2", "name": "file_edit", "arguments": {"path": "other.txt", "old": "disk", "new": "changed"}}]}, {"text": "2"},
		{"tool_calls": [{"id": "w1", "name": "file_write", "arguments": {"path": "proj/new.txt", "content": "created\n"}}]}, {"text": "3"},
		{"tool_calls": [{"id": "w2", "name": "file_write", "arguments": {"path": "fresh.txt", "content": "fresh\n"}}]}, {"text": "4"}]`},
	{name: "plan", level: "workspace", rounds: `[
		{"tool_calls": [{"id": "p1", "name": "checklist_add", "arguments": {"items": [{"text": "Write the tests", "status": "in_progress"}]}}]},
		{"tool_calls": [{"id": "p2", "name": "checklist_edit", "arguments": {"id": "c1", "status": "completed"}}]},
		{"text": "done"}]`},
	{name: "cancel", level: "unrestricted", rounds: `[
		{"tool_calls": [{"id": "s1", "name": "shell_execute", "arguments": {"command": "echo started; sleep 30"}}]},
		{"tool_calls": [{"id": "s2", "name": "shell_execute", "arguments": {"command": "sleep 30"}}]}]`},
	{name: "subagent", level: "read", extra: "approvals = true\n", rounds: `[
		{"tool_calls": [{"id": "sp", "name": "agent_spawn", "arguments": {"task": "write sub.txt", "description": "Writer"}}], "usage": {"input_tokens": 10, "output_tokens": 1}},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "sub.txt", "content": "from the child"}}], "usage": {"input_tokens": 100, "output_tokens": 10}},
		{"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "sub.txt"}}]},
		{"text": "Wrote sub.txt.", "usage": {"input_tokens": 200, "output_tokens": 20}},
		{"text": "The sub-agent wrote it.", "usage": {"input_tokens": 20, "output_tokens": 2}}]`},
	// The cancelled command leaves a process outside its group holding its
	// output open, so the cancelled turn takes a moment to end (the shell's
	// WaitDelay): the next prompt arrives while it is still in flight.
	{name: "relay", level: "workspace", extra: "[serve]\nrelay_provider_errors = false\n", rounds: `[
		{"error": {"status": 400, "body": "account 1234 over quota"}}]`},
	// The first reply fills the window, so the second turn compacts first.
	{name: "compaction", level: "workspace", rounds: `[
		{"text": "one", "usage": {"input_tokens": 95000, "output_tokens": 10}},
		{"text": "the summary", "usage": {"input_tokens": 90000, "output_tokens": 100}},
		{"text": "two", "usage": {"input_tokens": 300, "output_tokens": 5}}]`},
	// $OUTSIDE is a directory outside the workspace.
	{name: "outside", level: "workspace", extra: "approvals = true\n", rounds: `[
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "$OUTSIDE/out.txt", "content": "outside\n"}}]}, {"text": "0"},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "$OUTSIDE/denied.txt", "content": "no\n"}}]}, {"text": "1"},
		{"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "$OUTSIDE/secret.txt"}}]}, {"text": "2"},
		{"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "$OUTSIDE/secret.txt"}}]}, {"text": "3"}]`},
	{name: "cancelprompt", level: "unrestricted", rounds: `[
		{"tool_calls": [{"id": "s1", "name": "shell_execute", "arguments": {"command": "setsid sleep 3 & sleep 30"}}]},
		{"text": "after the stop"}]`},
	{name: "setmode", level: "read", rounds: `[
		{"tool_calls": [{"id": "r", "name": "file_read", "arguments": {"path": "in.txt"}}]},
		{"tool_calls": [{"id": "w", "name": "file_write", "arguments": {"path": "out.txt", "content": "written"}}]},
		{"text": "done"}]`, files: map[string]string{"in.txt": "on disk\n"}},
}

func init() {
	scenarios = append(scenarios, scenario{name: "memories", level: "workspace", projects: []string{"web"}, rounds: `[
		{"tool_calls": [{"id": "m1", "name": "memory_write", "arguments": {"text": "user likes tabs"}}]}, {"text": "noted"},
		{"tool_calls": [{"id": "r1", "name": "file_find", "arguments": {"pattern": "*.md"}}]}, {"stall": "response"},
		{"tool_calls": [{"id": "m2", "name": "memory_write", "arguments": {"text": "web deploys with make ship"}}]}, {"text": "noted"}]`,
		check: checkMemoryRequests})
	scenarios = append(scenarios, scenario{name: "skills", level: "workspace", rounds: `[
		{"text": "deployed"}, {"text": "a directory"}, {"text": "no such command"},
		{"tool_calls": [{"id": "sw", "name": "skill_write", "arguments": {"name": "notes", "description": "Keep notes.", "body": "NOTES-BODY"}}]},
		{"text": "written"}]`,
		files: map[string]string{
			"AGENTS.md":                      "AGENTS-RULES\n",
			".agents/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy the app.\n---\nDEPLOY-BODY\n",
			".agents/skills/deploy/run.sh":   "echo deploy\n",
			".agents/skills/status/SKILL.md": "---\nname: status\ndescription: A skill named like a built-in.\n---\nSTATUS-BODY\n",
			".agents/skills/broken/SKILL.md": "no front matter\n",
		},
		check: checkSkillRequests})
}

// checkSystemPrompts: the client's systemPrompt ends the system prompt,
// is kept by a load that sends none and by a fork, and replaced by a
// resume that sends another.
func checkSystemPrompts(t *testing.T, reqs []modeltest.Recorded) {
	if len(reqs) != 4 {
		t.Fatalf("%d model requests", len(reqs))
	}
	system := func(i int) string {
		var b struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[i].Body, &b); err != nil {
			t.Fatal(err)
		}
		s, _ := b.Messages[0].Content.(string)
		return s
	}
	for i, want := range []string{"CLIENT-RULE-ONE", "CLIENT-RULE-ONE", "CLIENT-RULE-TWO", "CLIENT-RULE-TWO"} {
		s := system(i)
		if !strings.HasSuffix(s, want) || strings.Count(s, "CLIENT-RULE") != 1 {
			t.Errorf("request %d: the system prompt ends %q, want %s once", i+1, s[max(0, len(s)-120):], want)
		}
	}
}

// checkMemoryRequests: every request ends with the memories the session
// sees then, as a message of their own: the user's on no project, the
// project's once it moved.
func checkMemoryRequests(t *testing.T, reqs []modeltest.Recorded) {
	if len(reqs) != 6 {
		t.Fatalf("%d model requests", len(reqs))
	}
	lastUser := func(i int) string {
		var b struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[i].Body, &b); err != nil {
			t.Fatal(err)
		}
		m := b.Messages[len(b.Messages)-1]
		s, _ := m.Content.(string)
		return m.Role + ": " + s
	}
	for i, want := range []string{
		"user: remember that I like tabs",
		"user: [Memories: your own (no project); newest first.",
		"user: [Memories: your own (no project); newest first.",
		"user: [Memories: your own (no project); newest first.",
		"user: remember how web deploys",
		"user: [Memories: project web; newest first.",
	} {
		if got := lastUser(i); !strings.HasPrefix(got, want) {
			t.Errorf("request %d ends with %q, want %q...", i+1, got, want)
		}
	}
	if got := lastUser(5); !strings.Contains(got, "- m2: web deploys with make ship") || strings.Contains(got, "tabs") {
		t.Errorf("the project's memories: %q", got)
	}
}

// checkSkillRequests: the skill's body follows the words of /deploy; the
// other slashes reach the model as typed; the system prompt carries the
// instructions and the list.
func checkSkillRequests(t *testing.T, reqs []modeltest.Recorded) {
	if len(reqs) != 5 {
		t.Fatalf("%d model requests", len(reqs))
	}
	type msg struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	}
	last := func(i int) (system, user string) {
		var b struct {
			Messages []msg `json:"messages"`
		}
		if err := json.Unmarshal(reqs[i].Body, &b); err != nil {
			t.Fatal(err)
		}
		system, _ = b.Messages[0].Content.(string)
		for _, m := range b.Messages {
			if s, ok := m.Content.(string); ok && m.Role == "user" {
				user = s
			}
		}
		return system, user
	}
	sys, u := last(0)
	if !strings.Contains(sys, "AGENTS-RULES") || strings.Contains(sys, "AGENTS-RULES-2") || !strings.Contains(sys, "- deploy: Deploy the app.") {
		t.Errorf("system prompt:\n%s", sys)
	}
	if s1, _ := last(2); s1 != sys {
		t.Error("the system prompt changed within the session before /reload")
	}
	if s2, _ := last(3); !strings.Contains(s2, "AGENTS-RULES-2") {
		t.Errorf("after /reload the system prompt is still:\n%s", s2)
	}
	if !strings.HasPrefix(u, "/deploy to staging\n") || !strings.Contains(u, "DEPLOY-BODY") || !strings.Contains(u, "- run.sh") {
		t.Errorf("invocation sent as %q", u)
	}
	for i, want := range []string{"/usr/lib is where?", "/nonexistent thing"} {
		if _, u := last(i + 1); u != want {
			t.Errorf("request %d: user %q, want %q", i+2, u, want)
		}
	}
}

func TestSDKClient(t *testing.T) {
	dir := clientDir(t)
	bin := mekaBinary(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			r := runScenario(t, dir, bin, sc)
			var skip string
			for _, f := range r.Failures {
				if strings.HasPrefix(f, "SKIP: ") {
					skip = f
					continue
				}
				t.Error(f)
			}
			if t.Failed() {
				t.Logf("meka stderr:\n%s", r.Stderr)
			}
			if r.Validated == 0 {
				t.Error("no message was validated against the schema")
			}
			t.Logf("%d messages, %d validated against the schema", len(r.Transcript), r.Validated)
			if skip != "" && !t.Failed() {
				if underCI() {
					t.Fatalf("the scenario skipped under CI: %s", strings.TrimPrefix(skip, "SKIP: "))
				}
				t.Skip(strings.TrimPrefix(skip, "SKIP: "))
			}
		})
	}
}

// runScenario starts a model server playing sc's rounds, writes a config
// pointing at it, and runs the Node client's scenario.
func runScenario(t *testing.T, dir, bin string, sc scenario) report {
	t.Helper()
	outside, err := host.Canonical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(`{"rounds":` + strings.ReplaceAll(sc.rounds, "$OUTSIDE", outside) + `}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	home := t.TempDir()
	ws, err := host.Canonical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range sc.files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := fmt.Sprintf(`default_profile = "main"

[profiles.main]
provider = "openai"
model = "main-model"
base_url = %[1]q
api_key_env = "MEKA_TEST_KEY"
context_window = 100000

[profiles.second]
provider = "openai"
model = "second-model"
base_url = %[1]q
api_key_env = "MEKA_TEST_KEY"
context_window = 50000

[models."main-model"]
input_price = 1.0
output_price = 2.0

[permissions]
default = %[2]q
%[3]s`, srv.URL+"/v1", sc.level, sc.extra)
	cfgPath := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"MEKA_BIN=" + bin, "MEKA_WORKSPACE=" + ws, "MEKA_OUTSIDE=" + outside, "MEKA_CONFIG=" + cfgPath,
		"MEKA_DATA_DIR=" + filepath.Join(home, "data"), "MEKA_TEST_KEY=test-key",
	}
	for _, p := range sc.projects {
		add := exec.CommandContext(t.Context(), bin, "projects", "add", p)
		add.Env = env
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("meka projects add %s: %v\n%s", p, err, out)
		}
	}
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(dir, "run.mjs"), sc.name)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node client: %v\n%s", err, stderr.String())
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("read the client's report: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if sc.check != nil {
		sc.check(t, srv.Requests())
	}
	return r
}

// TestSDKClientMCP runs the mcp scenario against the in-repo MCP test
// server and a server that cannot start.
func TestSDKClientMCP(t *testing.T) {
	dir := clientDir(t)
	bin := mekaBinary(t)
	server := filepath.Join(filepath.Dir(bin), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", server, "meka.dev/meka/internal/mcp/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build mcptestserver: %v\n%s", err, out)
	}
	sc := scenario{name: "mcp", level: "workspace", extra: fmt.Sprintf(`
[mcp.servers.t]
command = %q
tool_permissions = { ask = "read" }

[mcp.servers.dead]
command = "/nonexistent/mcp-server"
`, server), rounds: `[
		{"tool_calls": [{"id": "a1", "name": "mcp__t__ask", "arguments": {"mode": "form"}}]},
		{"tool_calls": [{"id": "a2", "name": "mcp__t__ask", "arguments": {"mode": "url"}}]},
		{"text": "Hello, Ada."}]`}
	r := runScenario(t, dir, bin, sc)
	for _, f := range r.Failures {
		t.Error(f)
	}
	if t.Failed() {
		t.Logf("meka stderr:\n%s", r.Stderr)
	}
	var sawForm, sawDecline bool
	for _, m := range r.Transcript {
		s := string(m.Msg)
		sawForm = sawForm || strings.Contains(s, `accept {\"name\":\"Ada\"}`)
		sawDecline = sawDecline || strings.Contains(s, `decline`)
	}
	if !sawForm || !sawDecline {
		t.Errorf("the tool results do not carry the answers (form %v, url declined %v)", sawForm, sawDecline)
	}
}
