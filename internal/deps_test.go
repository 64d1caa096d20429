package internal_test

// This test is meka's layering policy, checked on every `go test`: each
// package may import only the meka packages its row of DESIGN.md's table
// lists, and only the packages named here may import a SQL driver or a
// provider SDK. It is modelled on the Go toolchain's go/build/deps_test.go.

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "meka.dev/meka"

// allowed maps a package (relative to the module) to the meka packages it
// may import. A package missing here fails the test until it is placed in
// the table, here and in DESIGN.md.
var allowed = map[string][]string{
	// L0
	"model":                   {},
	"model/sse":               {},
	"permission":              {},
	"internal/sandbox":        {"internal/sandbox/helper", "internal/sandbox/credential"},
	"internal/sandbox/helper": {},
	// The credential rule the sandbox strips by and the config checks
	// env_passthrough against: a leaf both import.
	"internal/sandbox/credential": {},
	"internal/schedule/cron":      {},
	"internal/imaging":            {},
	"internal/config":             {"permission", "internal/sandbox/credential", "internal/typo"},
	"internal/skills":             {},
	"internal/termsafe":           {},
	// "Did you mean": how far a mistyped word is from the names meant.
	"internal/typo":     {},
	"internal/storerec": {},
	// Tests only: the feed and outbox suite both SQL stores pass.
	"internal/storerec/feedtest": {"internal/storerec"},
	// Tests only: skip for a missing tool, or fail under CI.
	"internal/testenv": {},
	// The release's SBOM of a binary, from its build info; and its
	// command, which .goreleaser.yaml runs.
	"internal/sbom": {},
	"cmd/meka-sbom": {"internal/sbom"},
	// Tests only: the release files (.goreleaser.yaml, Dockerfile, the
	// distribution manifests) checked against each other and the binary.
	"internal/release": {},
	// L1
	"session":             {"model"},
	"session/sessiontest": {"session", "model"},
	"tool":                {"model", "permission"},
	"model/openai":        {"model", "model/sse"},
	"model/anthropic":     {"model", "model/sse"},
	"model/responses":     {"model", "model/sse"},
	"model/gemini":        {"model", "model/sse"},
	"model/script":        {"model"},
	"model/modeltest":     {"model", "model/script"},
	"internal/task":       {"internal/sandbox"},
	// L2
	"agent":                    {"model", "tool", "session", "permission"},
	"internal/tools/fstool":    {"tool", "permission", "internal/sandbox", "internal/task", "model"},
	"internal/tools/shelltool": {"tool", "permission", "internal/sandbox", "internal/task", "model"},
	"internal/mcp":             {"tool", "model", "permission", "internal/sandbox", "internal/imaging"},
	"internal/mcp/mcptest":     {},
	"internal/rowcodec":        {"session", "model"},
	"internal/sqlite":          {"session", "model", "internal/rowcodec", "internal/storerec"},
	"internal/postgres":        {"session", "model", "internal/rowcodec", "internal/storerec"},
	"internal/postgres/pgtest": {},
	"internal/prompt":          {"model", "session", "internal/skills"},
	// stats: meka stats, over either store's spend query (storerec's records).
	"internal/stats": {"internal/storerec"},
	// telemetry: OpenTelemetry spans and counters of sessions' engine
	// events and model calls.
	"internal/telemetry": {"agent", "model"},
	// The one event vocabulary: built from rows and engine events, shared
	// by the HTTP feed, --oneshot --json and export.
	"internal/events": {"agent", "session", "plan", "model"},
	// Checkpoints of the files turns change (shadow git repositories), and
	// git worktrees for sessions and sub-agents.
	"internal/checkpoint": {},
	"internal/worktree":   {},
	// Export and import of sessions, over rows.
	"internal/archive": {"session", "model", "internal/events"},
	// Language servers, confined like commands; the file tools take their
	// diagnostics through an option, so neither imports the other.
	"internal/lsp": {"internal/sandbox"},
	// L3
	"plan":              {"agent", "tool", "session", "model"},
	"plan/checklist":    {"plan", "agent", "tool", "session", "model", "permission"},
	"plan/todo":         {"plan", "agent", "tool", "session", "model", "permission"},
	"plan/writetodos":   {"plan", "agent", "tool", "session", "model", "permission"},
	"internal/subagent": {"agent", "tool", "session", "model", "permission", "internal/skills"},
	"internal/memory":   {"agent", "tool", "session", "model", "permission"},
	// People's hooks in Claude Code's format, on the engine's seams; they
	// run commands (confined when asked) and speak events' payloads.
	"internal/hooks": {"agent", "tool", "session", "model", "permission", "internal/sandbox", "internal/events"},
	// best-of: N sessions in worktrees, run through a Runner the
	// composition root passes; their logs read for tests and summaries.
	"internal/bestof": {"internal/worktree", "session", "model"},
	// L4
	// host satisfies subagent.Spawner, so it knows the interface's types.
	"internal/host": {"agent", "plan", "session", "tool", "permission", "model", "internal/task",
		"internal/sandbox", "internal/tools/fstool", "internal/tools/shelltool", "internal/prompt",
		// The skill tools the host gives every session read and write skills.
		"internal/skills", "internal/subagent", "internal/mcp",
		// Checkpoints of what turns change, and rewinds of them; the
		// worktrees of sub-agents spawned with isolation "worktree".
		"internal/checkpoint", "internal/worktree"},
	"internal/schedule/sqlstore":     {"internal/schedule", "internal/storerec"},
	"internal/schedule/sqlitestore":  {"internal/schedule", "internal/schedule/sqlstore", "internal/sqlite"},
	"internal/schedule/pgstore":      {"internal/schedule", "internal/schedule/sqlstore", "internal/postgres"},
	"internal/schedule/scheduletest": {"internal/schedule", "session"},
	"internal/schedule":              {"internal/schedule/cron", "internal/sandbox", "session", "tool", "permission", "model", "agent"},
	// L5: front doors never import each other.
	"internal/acp/jsonrpc": {},
	"internal/acp":         {"internal/acp/jsonrpc", "internal/imaging", "internal/host", "internal/schedule", "plan", "permission", "session", "model", "agent", "tool", "internal/events"},
	"internal/httpapi":     {"internal/host", "internal/schedule", "plan", "permission", "session", "model", "agent", "tool", "internal/events", "internal/archive", "internal/httpapi/web"},
	// The browser app httpapi serves: assets and login codes, none of meka.
	"internal/httpapi/web": {},
	"internal/repl":        {"internal/host", "internal/schedule", "plan", "permission", "session", "model", "agent", "tool", "internal/termsafe", "internal/events"},
	"internal/oneshot":     {"internal/host", "internal/schedule", "plan", "permission", "session", "model", "agent", "tool", "internal/termsafe", "internal/events"},
	// meka doctor's checks: the endpoint through the provider, the
	// confinement backends, the MCP servers, the language servers; the
	// config is read for it.
	"internal/doctor": {"model", "internal/sandbox", "internal/mcp", "internal/lsp"},
	// L6: the composition root may import anything.
	"internal/cli": {"*"},
	// L7
	"cmd/meka": {"internal/cli"},
	// Outside the product: the benchmark drives built binaries against a
	// modeltest server; its floor agent imports nothing from meka, so it
	// stays the floor.
	"bench":       {"model/modeltest", "model/script"},
	"bench/floor": {},
}

// exclusive names third-party packages only some meka packages may import.
var exclusive = map[string][]string{
	"modernc.org/sqlite":      {"internal/sqlite"},
	"database/sql":            {"internal/sqlite"},
	"github.com/jackc/pgx/v5": {"internal/postgres", "internal/postgres/pgtest"},
	// The MCP client, and the test server built on the same SDK.
	"github.com/modelcontextprotocol/go-sdk": {"internal/mcp", "internal/mcp/mcptest"},
	// OpenTelemetry's API, SDK and OTLP/HTTP exporters.
	"go.opentelemetry.io": {"internal/telemetry"},
	// The JSON-RPC connection language servers speak.
	"go.lsp.dev": {"internal/lsp"},
}

func TestLayering(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil || len(pkg.GoFiles) == 0 {
			return nil // no non-test Go files here
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if pkg.Name == "main" && rel != "cmd/meka" && strings.HasPrefix(rel, "internal/") {
			return nil
		}
		pkgs = append(pkgs, rel)
		checkImports(t, rel, pkg.Imports)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pkgs)
	if len(pkgs) < 5 {
		t.Fatalf("found only %d packages: %v", len(pkgs), pkgs)
	}
}

func checkImports(t *testing.T, pkg string, imports []string) {
	t.Helper()
	may, ok := allowed[pkg]
	if !ok {
		t.Errorf("package %s is not in the layering table (internal/deps_test.go and DESIGN.md)", pkg)
		return
	}
	for _, imp := range imports {
		for ext, owners := range exclusive {
			if imp == ext || strings.HasPrefix(imp, ext+"/") {
				if !contains(owners, pkg) {
					t.Errorf("%s imports %s, which only %v may import", pkg, imp, owners)
				}
			}
		}
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		dep := strings.TrimPrefix(imp, module+"/")
		if !contains(may, dep) && !contains(may, "*") {
			t.Errorf("%s imports %s, which its layer does not allow (may import %v)", pkg, dep, may)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
