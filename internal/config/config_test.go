package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/permission"
)

func TestDefault(t *testing.T) {
	c := Default()
	if !slices.Equal(c.Permissions.Enabled, permission.Levels) || c.Permissions.Default != permission.Workspace || c.Permissions.Approvals {
		t.Errorf("permissions = %+v", c.Permissions)
	}
	if c.Tools.Plan != PlanChecklist || !c.Tools.PlanCheckCompletion || c.Tools.MaxCompletionNudges != 9 || len(c.Tools.Deny) != 0 {
		t.Errorf("tools = %+v", c.Tools)
	}
	wantSched := Schedule{
		Enabled: true, PollInterval: 10 * time.Second, MissedGrace: 24 * time.Hour, GateTimeout: 30 * time.Second,
		MaxJobs: 50, MaxConsecutiveFires: 5, ClaimLease: time.Hour, Location: time.Local,
	}
	if !reflect.DeepEqual(c.Schedule, wantSched) {
		t.Errorf("schedule = %+v, want %+v", c.Schedule, wantSched)
	}
	wantServe := Serve{Listen: "127.0.0.1:7878", IdleTimeout: 24 * time.Hour, IdleSweepInterval: 5 * time.Minute, RelayProviderErrors: true, FeedRetention: 7 * 24 * time.Hour,
		StreamHeartbeat: 15 * time.Second, StreamWriteTimeout: 30 * time.Second}
	if !reflect.DeepEqual(c.Serve, wantServe) {
		t.Errorf("serve = %+v, want %+v", c.Serve, wantServe)
	}
	if c.MCP.DefaultPermission != permission.Unrestricted || len(c.MCP.Servers) != 0 || c.MCP.ToolSearch != "auto" || c.MCP.ToolSearchBudget != 10240 {
		t.Errorf("mcp = %+v", c.MCP)
	}
	// Default hands out fresh values: changing one leaves the next alone.
	c.Permissions.Enabled[0] = permission.Unrestricted
	c.Tools.ToolPermissions["x"] = permission.None
	if d := Default(); d.Permissions.Enabled[0] != permission.None || len(d.Tools.ToolPermissions) != 0 {
		t.Error("Default shares state between calls")
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, doc := range []string{"", "# nothing here\n", "[schedule]\n[serve]\n"} {
		c, err := Parse("config.toml", []byte(doc))
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		want := Default()
		want.File = "config.toml"
		want.Settings = c.Settings // what the file set, not a value
		if !reflect.DeepEqual(c, want) {
			t.Errorf("Parse(%q) = %+v, want the defaults %+v", doc, c, want)
		}
	}
}

const fullConfig = `
default_profile = "local"

[profiles.local]
provider = "openai"
model = "qwen3-coder"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "LOCAL_KEY"
context_window = 131072
max_output_tokens = 8192
max_request_bytes = 4000000
vision = false
plan = "update_plan"
reasoning_effort = "high"
connect_timeout = "3s"
first_token_timeout = "5m"
stream_idle_timeout = "90s"

[profiles.claude]
provider = "anthropic"

[profiles.replay]
provider = "script"
script = "scripts/turn.txt"

[permissions]
enabled = ["unrestricted", "read", "workspace"]
default = "read"
approvals = true
network = true
env_passthrough = ["GOFLAGS", "NPM_CONFIG_*_URL"]

[tools]
deny = ["shell_*", "web_fetch"]
plan = "write_todos"
plan_check_completion = false
max_completion_nudges = 3

[tools.tool_permissions]
file_read = "none"
"shell.run" = "unrestricted"

[schedule]
enabled = false
poll_interval = "5s"
missed_grace = "1.5h"
gate_timeout = "1m"
max_jobs = 10
max_consecutive_fires = 2
claim_lease = "2h 30m"
timezone = "America/New_York"

[serve]
listen = "[::1]:9000"
idle_timeout = "30m"
idle_sweep_interval = "1m"
relay_provider_errors = false
feed_retention = "36h"

[mcp]
default_permission = "read"
tool_search = "always"
tool_search_budget = 4096

[mcp.servers.files]
command = "mcp-files"
args = ["--root", "."]
env = { DEBUG = "1" }
permission = "workspace"
tool_permissions = { delete = "unrestricted" }
startup_timeout = "3s"
tool_timeout = "2m"
disabled_tools = ["delete"]
required = true

[mcp.servers.remote]
url = "https://mcp.example.com/v1"
headers = { Authorization = "Bearer token" }
enabled = false
enabled_tools = ["search"]
`

func TestParseFull(t *testing.T) {
	c, err := Parse(filepath.Join("etc", "meka", "config.toml"), []byte(fullConfig))
	if err != nil {
		t.Fatal(err)
	}
	wantProfiles := map[string]Profile{
		"local": {
			Name: "local", Provider: ProviderOpenAI, Model: "qwen3-coder", BaseURL: "http://127.0.0.1:11434/v1",
			APIKeyEnv: "LOCAL_KEY", ContextWindow: 131072, MaxOutputTokens: 8192, MaxRequestBytes: 4000000,
			Vision: false, Plan: PlanUpdatePlan, ReasoningEffort: "high",
			ConnectTimeout: 3 * time.Second, FirstTokenTimeout: 5 * time.Minute, StreamIdleTimeout: 90 * time.Second,
		},
		"claude": {
			Name: "claude", Provider: ProviderAnthropic, Model: "claude-sonnet-4-5", APIKeyEnv: "ANTHROPIC_API_KEY", Vision: true,
			ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout,
		},
		"replay": {
			Name: "replay", Provider: ProviderScript, Script: filepath.Join("etc", "meka", "scripts", "turn.txt"), Vision: true,
			ConnectTimeout: DefaultConnectTimeout, FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout,
		},
	}
	if !reflect.DeepEqual(c.Profiles, wantProfiles) {
		t.Errorf("profiles =\n%+v\nwant\n%+v", c.Profiles, wantProfiles)
	}
	if c.DefaultProfile != "local" {
		t.Errorf("default_profile = %q", c.DefaultProfile)
	}
	wantPerm := Permissions{
		Enabled: []permission.Level{permission.Read, permission.Workspace, permission.Unrestricted},
		Default: permission.Read, Approvals: true,
		Network: true, EnvPassthrough: []string{"GOFLAGS", "NPM_CONFIG_*_URL"},
	}
	if !reflect.DeepEqual(c.Permissions, wantPerm) {
		t.Errorf("permissions = %+v, want %+v", c.Permissions, wantPerm)
	}
	wantTools := Tools{
		Deny: []string{"shell_*", "web_fetch"}, Plan: PlanWriteTodos, PlanCheckCompletion: false, MaxCompletionNudges: 3,
		ToolPermissions: map[string]permission.Level{"file_read": permission.None, "shell.run": permission.Unrestricted},
	}
	if !reflect.DeepEqual(c.Tools, wantTools) {
		t.Errorf("tools = %+v, want %+v", c.Tools, wantTools)
	}
	s := c.Schedule
	if s.Enabled || s.PollInterval != 5*time.Second || s.MissedGrace != 90*time.Minute || s.GateTimeout != time.Minute ||
		s.MaxJobs != 10 || s.MaxConsecutiveFires != 2 || s.ClaimLease != 150*time.Minute ||
		s.Timezone != "America/New_York" || s.Location == nil || s.Location.String() != "America/New_York" {
		t.Errorf("schedule = %+v", s)
	}
	wantServe := Serve{Listen: "[::1]:9000", IdleTimeout: 30 * time.Minute, IdleSweepInterval: time.Minute, RelayProviderErrors: false, FeedRetention: 36 * time.Hour,
		StreamHeartbeat: 15 * time.Second, StreamWriteTimeout: 30 * time.Second}
	if !reflect.DeepEqual(c.Serve, wantServe) {
		t.Errorf("serve = %+v, want %+v", c.Serve, wantServe)
	}
	ws := permission.Workspace
	wantMCP := MCP{
		DefaultPermission: permission.Read, ToolSearch: "always", ToolSearchBudget: 4096,
		Servers: map[string]MCPServer{
			"files": {
				Name: "files", Command: "mcp-files", Args: []string{"--root", "."}, Env: map[string]string{"DEBUG": "1"},
				Permission: &ws, ToolPermissions: map[string]permission.Level{"delete": permission.Unrestricted},
				StartupTimeout: 3 * time.Second, ToolTimeout: 2 * time.Minute, DisabledTools: []string{"delete"}, Required: true,
			},
			"remote": {
				Name: "remote", URL: "https://mcp.example.com/v1", Headers: map[string]string{"Authorization": "Bearer token"},
				ToolPermissions: map[string]permission.Level{}, Disabled: true, EnabledTools: []string{"search"},
				StartupTimeout: DefaultMCPStartupTimeout, ToolTimeout: DefaultMCPToolTimeout,
			},
		},
	}
	if !reflect.DeepEqual(c.MCP, wantMCP) {
		t.Errorf("mcp = %+v, want %+v", c.MCP, wantMCP)
	}
	if got := c.PlanFor(c.Profiles["local"]); got != PlanUpdatePlan {
		t.Errorf("PlanFor(local) = %q", got)
	}
	if got := c.PlanFor(c.Profiles["claude"]); got != PlanWriteTodos {
		t.Errorf("PlanFor(claude) = %q", got)
	}
	if !c.Tools.Denied("shell_run") || !c.Tools.Denied("web_fetch") || c.Tools.Denied("file_read") {
		t.Error("Denied does not follow tools.deny")
	}
	if c.Tools.Level("file_read", permission.Read) != permission.None || c.Tools.Level("file_write", permission.Workspace) != permission.Workspace {
		t.Error("Level does not follow tools.tool_permissions")
	}
	if c.Permissions.IsEnabled(permission.None) || !c.Permissions.IsEnabled(permission.Unrestricted) {
		t.Error("IsEnabled does not follow permissions.enabled")
	}
}

func TestParseInstructions(t *testing.T) {
	c, err := Parse("config.toml", []byte("[instructions]\nfallback_files = [\"RULES.md\"]\nmax_bytes = 4096\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Instructions.FallbackFiles) != 1 || c.Instructions.FallbackFiles[0] != "RULES.md" || c.Instructions.MaxBytes != 4096 {
		t.Fatalf("%+v", c.Instructions)
	}
}

func TestParseByteOrderMarkAndCRLF(t *testing.T) {
	c, err := Parse("c.toml", []byte("\ufeff[serve]\r\nlisten = \"127.0.0.1:1\"\r\n"))
	if err != nil || c.Serve.Listen != "127.0.0.1:1" {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
	_, err = Parse("c.toml", []byte("\ufeff[serve]\r\nlisten = \"x\"\r\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Key != "serve.listen" {
		t.Fatalf("Parse = %v; want an error at line 2", err)
	}
}

func TestParseInlineAndDottedForms(t *testing.T) {
	// The same settings written as dotted keys and inline tables.
	doc := `profiles.a = { provider = "openai", model = "m", vision = false }
permissions.enabled = ["read", "workspace"]
tools.tool_permissions.shell_run = "none"
schedule = { claim_lease = "2h" }
`
	c, err := Parse("config.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Profiles["a"]; p.Provider != ProviderOpenAI || p.Model != "m" || p.Vision {
		t.Errorf("profile a = %+v", p)
	}
	if c.Tools.ToolPermissions["shell_run"] != permission.None || c.Schedule.ClaimLease != 2*time.Hour {
		t.Errorf("tools = %+v, schedule = %+v", c.Tools, c.Schedule)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		line int
		key  string
		msg  string // substring of Error.Msg
	}{
		{"syntax", "default_profile = \n", 1, "", "start of value"},
		{"unterminated string", "[profiles.a]\nmodel = \"x\n", 2, "", ""},
		{"unknown key", "[profiles.local]\nprovider = \"openai\"\nmodle = \"x\"\n", 3, "profiles.local.modle", `unknown key (did you mean "model"?)`},
		{"unknown key, wrong case", "[profiles.a]\nprovider = \"openai\"\nModel = \"x\"\n", 3, "profiles.a.Model", "unknown key"},
		{"unknown table", "\n[telemetree]\nenabled = true\n", 2, "telemetree", "unknown key"},
		{"unknown top-level key", "default_profil = \"a\"\n", 1, "default_profil", `did you mean "default_profile"`},
		{"unknown key in inline table", "schedule = { poll = \"1s\" }\n", 1, "schedule.poll", "unknown key"},
		{"unknown dotted key", "serve.port = 80\n", 1, "serve.port", "unknown key"},
		{"string for int", "[profiles.a]\nprovider = \"openai\"\ncontext_window = \"big\"\n", 3, "profiles.a.context_window", "want a number of tokens, got a string"},
		{"float for int", "[schedule]\nmax_jobs = 1.5\n", 2, "schedule.max_jobs", "got a float"},
		{"int too large", "[schedule]\nmax_jobs = 99999999999999999999\n", 2, "schedule.max_jobs", "too large"},
		{"int for string", "default_profile = 1\n", 1, "default_profile", "want a string, got an integer"},
		{"int for duration", "[schedule]\npoll_interval = 10\n", 2, "schedule.poll_interval", `want a duration string such as "30m"`},
		{"string for bool", "[permissions]\napprovals = \"yes\"\n", 2, "permissions.approvals", "want a boolean"},
		{"array for table", "profiles = []\n", 1, "profiles", "got an array"},
		{"scalar for profile", "[profiles]\nlocal = 5\n", 2, "profiles.local", "want a table, got an integer"},
		{"table for string", "[profiles.a]\nprovider = \"openai\"\nmodel.name = \"x\"\n", 3, "profiles.a.model", "want a string, got a table"},
		{"table for level", "[tools.tool_permissions]\nfile.read = \"read\"\n", 2, "tools.tool_permissions.file", "want a permission level name"},
		{"bad passthrough glob", "[permissions]\nenv_passthrough = [\"GO[\"]\n", 2, "permissions.env_passthrough", "not a variable name glob"},
		{"passthrough with value", "[permissions]\nenv_passthrough = [\"A=b\"]\n", 2, "permissions.env_passthrough", "not a variable name glob"},
		{"passthrough of everything", "[permissions]\nenv_passthrough = [\"*\"]\n", 2, "permissions.env_passthrough", `"*" would pass OPENAI_API_KEY, a credential`},
		{"passthrough of a token", "[permissions]\nenv_passthrough = [\n  \"GOFLAGS\",\n  \"GITHUB_*\",\n]\n", 4, "permissions.env_passthrough", `"GITHUB_*" would pass GITHUB_TOKEN`},
		{"passthrough of a profile's key", "[profiles.a]\nprovider = \"openai\"\napi_key_env = \"MY_KEY\"\n[permissions]\nenv_passthrough = [\"MY_*\"]\n", 5, "permissions.env_passthrough", `"MY_*" would pass MY_KEY`},
		{"int in level list", "[permissions]\nenabled = [\"read\", 2]\n", 2, "permissions.enabled", "want an array of permission level names"},
		{"duplicate table", "[profiles.a]\nprovider = \"openai\"\n[profiles.a]\n", 3, "profiles.a", "already exists"},
		{"array of tables", "[[profiles.a]]\nprovider = \"openai\"\n", 1, "profiles.a", "want a table"},

		{"missing provider", "\n[profiles.local]\nmodel = \"x\"\n", 2, "profiles.local", "missing provider"},
		{"unknown provider", "[profiles.local]\nprovider = \"palm\"\n", 2, "profiles.local.provider", `unknown provider "palm" (want openai, openai-responses, anthropic, gemini or script)`},
		{"empty model", "[profiles.a]\nprovider = \"openai\"\nmodel = \"\"\n", 3, "profiles.a.model", "empty model"},
		{"script without path", "[profiles.s]\nprovider = \"script\"\n", 1, "profiles.s", "missing script"},
		{"script on openai", "[profiles.a]\nprovider = \"openai\"\nscript = \"x\"\n", 3, "profiles.a.script", "only for provider"},
		{"bad base_url", "[profiles.a]\nprovider = \"openai\"\nbase_url = \"localhost:8080\"\n", 3, "profiles.a.base_url", "not an http or https URL"},
		{"key in api_key_env", "[profiles.a]\nprovider = \"openai\"\napi_key_env = \"sk-proj-abc123\"\n", 3, "profiles.a.api_key_env", "not the key"},
		{"zero context window", "[profiles.a]\nprovider = \"openai\"\ncontext_window = 0\n", 3, "profiles.a.context_window", "not a positive number"},
		{"negative output tokens", "[profiles.a]\nprovider = \"openai\"\nmax_output_tokens = -5\n", 3, "profiles.a.max_output_tokens", "-5 is not a positive"},
		{"bad profile plan", "[profiles.a]\nprovider = \"openai\"\nplan = \"todo\"\n", 3, "profiles.a.plan", `unknown plan "todo"`},
		{"blank profile name", "[profiles.\"my profile\"]\nprovider = \"openai\"\n", 1, `profiles."my profile"`, "blank"},
		{"default_profile missing", "default_profile = \"prod\"\n\n[profiles.dev]\nprovider = \"openai\"\n", 1, "default_profile", `no profile "prod" (have dev)`},
		{"default_profile, no profiles", "default_profile = \"prod\"\n", 1, "default_profile", "no profiles are configured"},

		{"bad level", "[permissions]\ndefault = \"admin\"\n", 2, "permissions.default", `unknown permission level "admin"`},
		{"bad level in list", "[permissions]\nenabled = [\n  \"read\",\n  \"write\",\n]\n", 4, "permissions.enabled", `unknown permission level "write"`},
		{"level listed twice", "[permissions]\nenabled = [\"read\", \"workspace\", \"read\"]\ndefault = \"read\"\n", 2, "permissions.enabled", "listed twice"},
		{"no levels", "[permissions]\nenabled = []\n", 2, "permissions.enabled", "at least one"},
		{"default not enabled", "[permissions]\nenabled = [\"read\", \"unrestricted\"]\ndefault = \"workspace\"\n", 3, "permissions.default", "not among permissions.enabled"},
		{"implicit default not enabled", "[permissions]\nenabled = [\"read\"]\n", 2, "permissions.enabled", `default level "workspace" is not enabled`},

		{"instruction file with a directory", "[instructions]\nfallback_files = [\"RULES.md\", \"docs/AI.md\"]\n", 2, "instructions.fallback_files", `"docs/AI.md" is not a file name`},
		{"zero instruction budget", "[instructions]\nmax_bytes = 0\n", 2, "instructions.max_bytes", ""},

		{"bad deny pattern", "[tools]\ndeny = [\"shell_*\", \"[x\"]\n", 2, "tools.deny", `bad pattern "[x"`},
		{"bad tools plan", "[tools]\nplan = \"Checklist\"\n", 2, "tools.plan", "unknown plan"},
		{"negative nudges", "[tools]\nmax_completion_nudges = -1\n", 2, "tools.max_completion_nudges", "negative"},
		{"bad tool level", "[tools.tool_permissions]\nshell_run = \"root\"\n", 2, "tools.tool_permissions.shell_run", `unknown permission level "root"`},
		{"bad quoted tool level", "[tools.tool_permissions]\n\"a.b\" = \"x\"\n", 2, `tools.tool_permissions."a.b"`, "unknown permission level"},

		{"bad duration", "[schedule]\npoll_interval = \"10 seconds please\"\n", 2, "schedule.poll_interval", `invalid duration "10 seconds please"`},
		{"duration case", "[serve]\nidle_timeout = \"30 Minutes\"\n", 2, "serve.idle_timeout", `did you mean "minutes"`},
		{"sub-second duration", "[schedule]\ngate_timeout = \"500ms\"\n", 2, "schedule.gate_timeout", "sub-second"},
		{"zero duration", "[schedule]\nmissed_grace = \"0s\"\n", 2, "schedule.missed_grace", "greater than zero"},
		{"bare number duration", "[serve]\nidle_sweep_interval = \"5\"\n", 2, "serve.idle_sweep_interval", "needs a unit"},
		{"lease under gate", "[schedule]\ngate_timeout = \"1m\"\nclaim_lease = \"30s\"\n", 3, "schedule.claim_lease", "not longer than gate_timeout"},
		{"lease equal gate", "[schedule]\nclaim_lease = \"30s\"\n", 2, "schedule.claim_lease", "not longer than gate_timeout (30s)"},
		{"gate over default lease", "[schedule]\ngate_timeout = \"2h\"\n", 2, "schedule.gate_timeout", "not shorter than claim_lease (1h)"},
		{"zero max_jobs", "[schedule]\nmax_jobs = 0\n", 2, "schedule.max_jobs", "not a positive"},
		{"bad timezone", "[schedule]\ntimezone = \"Mars/Olympus\"\n", 2, "schedule.timezone", `unknown time zone "Mars/Olympus"`},
		{"empty timezone", "[schedule]\ntimezone = \"\"\n", 2, "schedule.timezone", "empty"},

		{"bad listen", "[serve]\nlisten = \"7878\"\n", 2, "serve.listen", "not a host:port"},
		{"webhook over plain http", "[serve.webhooks.ops]\nurl = \"http://hooks.example/m\"\nsecret_file = \"s\"\nevents = [\"*\"]\n", 2, "serve.webhooks.ops.url", "only for a loopback receiver"},
		{"webhook without events", "[serve.webhooks.ops]\nurl = \"https://hooks.example/m\"\nsecret_file = \"s\"\nevents = []\n", 4, "serve.webhooks.ops.events", "no events"},
		{"webhook without secret", "[serve.webhooks.ops]\nurl = \"https://hooks.example/m\"\nevents = [\"*\"]\n", 1, "serve.webhooks.ops", "missing secret_file"},
		{"bad listen port", "[serve]\nlisten = \"127.0.0.1:http\"\n", 2, "serve.listen", "no valid port"},

		{"mcp both", "[mcp.servers.x]\ncommand = \"a\"\nurl = \"https://x\"\n", 3, "mcp.servers.x.url", "not both"},
		{"mcp neither", "[mcp.servers.x]\nargs = [\"a\"]\n", 1, "mcp.servers.x", "missing command or url"},
		{"mcp bad level", "[mcp]\ndefault_permission = \"all\"\n", 2, "mcp.default_permission", "unknown permission level"},
		{"mcp bad tool search", "[mcp]\ntool_search = \"sometimes\"\n", 2, "mcp.tool_search", `"sometimes" is not "auto", "always" or "never"`},
		{"mcp zero tool search budget", "[mcp]\ntool_search_budget = 0\n", 2, "mcp.tool_search_budget", "not a positive"},
		{"mcp bad tool level", "[mcp.servers.x]\ncommand = \"a\"\n[mcp.servers.x.tool_permissions]\nrm = \"x\"\n", 4, "mcp.servers.x.tool_permissions.rm", "unknown permission level"},
		{"mcp env on url", "[mcp.servers.x]\nurl = \"https://x\"\nenv = { A = \"1\" }\n", 3, "mcp.servers.x.env", "only for a server started by command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("config.toml", []byte(tt.doc))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %+v, %v; want an *Error", c, err)
			}
			if e.File != "config.toml" || e.Line != tt.line || e.Key != tt.key || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("got %s (file %q, line %d, key %q, msg %q)\nwant line %d, key %q, msg containing %q",
					e, e.File, e.Line, e.Key, e.Msg, tt.line, tt.key, tt.msg)
			}
			if tt.line > 0 && e.Column < 1 {
				t.Errorf("column %d, want a position", e.Column)
			}
		})
	}
}

func TestErrorFormat(t *testing.T) {
	_, err := Parse("config.toml", []byte("[profiles.local]\nprovider = \"openai\"\nmodle = \"x\"\n"))
	if got, want := err.Error(), `config.toml:3: key "profiles.local.modle": unknown key (did you mean "model"?)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{File: "c.toml", Line: 2, Msg: "bad"}, "c.toml:2: bad"},
		{Error{File: "c.toml", Key: "a.b", Msg: "bad"}, `c.toml: key "a.b": bad`},
		{Error{Line: 4, Key: "a", Msg: "bad"}, `line 4: key "a": bad`},
		{Error{Msg: "bad"}, "bad"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestErrorUnwrap(t *testing.T) {
	_, err := Parse("c.toml", []byte("[permissions]\ndefault = \"admin\"\n"))
	if !errors.Is(err, permission.ErrUnknownLevel) {
		t.Errorf("%v does not wrap permission.ErrUnknownLevel", err)
	}
	_, err = Parse("c.toml", []byte("[schedule]\npoll_interval = \"1H\"\n"))
	var de *DurationError
	if !errors.As(err, &de) || de.Input != "1H" {
		t.Errorf("%v does not wrap the *DurationError", err)
	}
	_, err = Parse("c.toml", []byte("default_profile = \"x\"\n"))
	if !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("%v does not wrap ErrUnknownProfile", err)
	}
}

func TestParseReportsEarliestError(t *testing.T) {
	doc := "[tools]\nplan = \"nope\"\n\n[permissions]\ndefault = \"nope\"\n"
	_, err := Parse("c.toml", []byte(doc))
	var e *Error
	if !errors.As(err, &e) || e.Line != 2 || e.Key != "tools.plan" {
		t.Errorf("Parse = %v; want the error on line 2", err)
	}
}

func TestSecretNotEchoed(t *testing.T) {
	const secret = "sk-ant-api03-secretsecret"
	_, err := Parse("c.toml", []byte("[profiles.a]\nprovider = \"anthropic\"\napi_key_env = \""+secret+"\"\n"))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Parse = %v; want an error that does not repeat the value", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	doc := "[profiles.replay]\nprovider = \"script\"\nscript = \"turn.txt\"\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.File != path || c.Profiles["replay"].Script != filepath.Join(dir, "turn.txt") {
		t.Errorf("Load = file %q, profiles %+v", c.File, c.Profiles)
	}

	if err := os.WriteFile(path, []byte("[serve]\nlisten = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	var e *Error
	if !errors.As(err, &e) || e.File != path || e.Line != 2 || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("Load of a bad file = %v; want an *Error naming %s:2", err, path)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("Load of a missing file = %v", err)
	}
}

func TestProfile(t *testing.T) {
	one := mustParse(t, "[profiles.only]\nprovider = \"openai\"\n")
	if p, err := one.Profile(""); err != nil || p.Name != "only" {
		t.Errorf("single profile: %+v, %v", p, err)
	}
	if _, err := one.Profile("other"); !errors.Is(err, ErrUnknownProfile) || !strings.Contains(err.Error(), "have only") {
		t.Errorf("unknown name: %v", err)
	}

	two := mustParse(t, "[profiles.a]\nprovider = \"openai\"\n[profiles.b]\nprovider = \"anthropic\"\n")
	if _, err := two.Profile(""); !errors.Is(err, ErrNoDefaultProfile) || !strings.Contains(err.Error(), "a, b") {
		t.Errorf("two profiles, no default: %v", err)
	}
	if p, err := two.Profile("b"); err != nil || p.Provider != ProviderAnthropic {
		t.Errorf("by name: %+v, %v", p, err)
	}
	if names := two.ProfileNames(); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("ProfileNames = %v", names)
	}

	withDefault := mustParse(t, "default_profile = \"b\"\n[profiles.a]\nprovider = \"openai\"\n[profiles.b]\nprovider = \"anthropic\"\n")
	if p, err := withDefault.Profile(""); err != nil || p.Name != "b" {
		t.Errorf("default_profile: %+v, %v", p, err)
	}

	none := Default()
	if _, err := none.Profile(""); !errors.Is(err, ErrNoProfile) {
		t.Errorf("no profiles: %v", err)
	}
	if _, err := none.Profile("x"); !errors.Is(err, ErrNoProfile) {
		t.Errorf("no profiles, by name: %v", err)
	}
}

func TestResolveProfile(t *testing.T) {
	env := mapEnv{"ANTHROPIC_API_KEY": "k"}
	c := Default()
	if p, err := c.ResolveProfile("", env.get); err != nil || p.Name != "default" || p.Provider != ProviderAnthropic {
		t.Errorf("zero config: %+v, %v", p, err)
	}
	if p, err := c.ResolveProfile("default", env.get); err != nil || p.Name != "default" {
		t.Errorf("zero config by name: %+v, %v", p, err)
	}
	if _, err := c.ResolveProfile("prod", env.get); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("zero config, other name: %v", err)
	}
	if _, err := c.ResolveProfile("", mapEnv{}.get); !errors.Is(err, ErrNoProfile) {
		t.Errorf("nothing at all: %v", err)
	}
	// A configured profile wins over the environment.
	cfg := mustParse(t, "[profiles.mine]\nprovider = \"openai\"\n")
	if p, err := cfg.ResolveProfile("", env.get); err != nil || p.Name != "mine" {
		t.Errorf("config over env: %+v, %v", p, err)
	}
}

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse("config.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(fullConfig))
	f.Add([]byte("[profiles.local]\nprovider = \"openai\"\nmodle = \"x\"\n"))
	f.Add([]byte("[schedule]\nclaim_lease = \"30s\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.toml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %T %v is not an *Error", err, err)
			}
			if e.File != "fuzz.toml" || !strings.HasPrefix(e.Error(), "fuzz.toml") {
				t.Fatalf("error %q does not name the file", e)
			}
			return
		}
		// What Parse accepts is valid.
		if !c.Permissions.IsEnabled(c.Permissions.Default) {
			t.Fatalf("default level %v not enabled in %v", c.Permissions.Default, c.Permissions.Enabled)
		}
		if c.Schedule.ClaimLease <= c.Schedule.GateTimeout {
			t.Fatalf("claim_lease %v <= gate_timeout %v", c.Schedule.ClaimLease, c.Schedule.GateTimeout)
		}
		for _, d := range []time.Duration{c.Schedule.PollInterval, c.Schedule.MissedGrace, c.Serve.IdleTimeout, c.Serve.IdleSweepInterval} {
			if d <= 0 {
				t.Fatalf("non-positive duration %v", d)
			}
		}
		for name, p := range c.Profiles {
			if p.Name != name || !slices.Contains(Providers, p.Provider) || (p.Provider == ProviderScript) != (p.Script != "") {
				t.Fatalf("invalid profile %q: %+v", name, p)
			}
		}
		if c.DefaultProfile != "" {
			if _, ok := c.Profiles[c.DefaultProfile]; !ok {
				t.Fatalf("default_profile %q names no profile", c.DefaultProfile)
			}
		}
		if !slices.Contains(Plans, c.Tools.Plan) || c.Tools.MaxCompletionNudges < 0 {
			t.Fatalf("invalid tools %+v", c.Tools)
		}
	})
}

func TestParseAgents(t *testing.T) {
	c, err := Parse("c.toml", []byte("[agents]\nmax_parallel = 2\nmax_depth = 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Agents != (Agents{MaxParallel: 2, MaxDepth: 0}) {
		t.Errorf("[agents] = %+v, want max_parallel 2, max_depth 0", c.Agents)
	}
	if d := Default().Agents; d != (Agents{MaxParallel: 4, MaxDepth: 1}) {
		t.Errorf("default [agents] = %+v, want 4 and 1", d)
	}
	for _, doc := range []string{"[agents]\nmax_parallel = 0\n", "[agents]\nmax_depth = -1\n", "[agents]\nmax_paralel = 3\n"} {
		if _, err := Parse("c.toml", []byte(doc)); err == nil {
			t.Errorf("Parse(%q) succeeded", doc)
		}
	}
}

func TestParseModels(t *testing.T) {
	c, err := Parse("config.toml", []byte("[models.\"gpt-4.1\"]\ninput_price = 2\noutput_price = 8.5\ncache_read_price = 0.5\n\n[models.local]\ninput_price = 0\noutput_price = 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := c.Models["gpt-4.1"]
	if m.InputPrice != 2 || m.OutputPrice != 8.5 || m.CacheReadPrice == nil || *m.CacheReadPrice != 0.5 || m.CacheWritePrice != nil {
		t.Fatalf("gpt-4.1: %+v", m)
	}
	if _, ok := c.Models["local"]; !ok {
		t.Fatalf("models: %+v", c.Models)
	}
	for _, tc := range []struct{ doc, key, msg string }{
		{"[models.x]\ninput_price = 1\n", "models.x", "missing output_price"},
		{"[models.x]\ninput_price = -1\noutput_price = 1\n", "models.x.input_price", "not a price"},
		{"[models.x]\ninput_price = 1\noutput_price = 1\ncache_write_price = \"cheap\"\n", "models.x.cache_write_price", "want a price in US dollars"},
		{"[models.x]\ninput_price = 1\noutput_price = 1\noutput_prize = 2\n", "models.x.output_prize", `did you mean "output_price"`},
	} {
		_, err := Parse("config.toml", []byte(tc.doc))
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %v, want %s: …%s…", tc.doc, err, tc.key, tc.msg)
		}
	}
}

func TestParseFallback(t *testing.T) {
	doc := "[profiles.a]\nprovider = \"openai\"\nfallback = [\"b\", \"c\"]\n[profiles.b]\nprovider = \"anthropic\"\n[profiles.c]\nprovider = \"gemini\"\n"
	c, err := Parse("config.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Profiles["a"].Fallback; !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("fallback %q", got)
	}
	for _, tc := range []struct{ doc, msg string }{
		{"[profiles.a]\nprovider = \"openai\"\nfallback = [\"x\"]\n", `no profile "x" (have a)`},
		{"[profiles.a]\nprovider = \"openai\"\nfallback = [\"a\"]\n", "cannot fall back to itself"},
		{"[profiles.a]\nprovider = \"openai\"\nfallback = [\"b\", \"b\"]\n[profiles.b]\nprovider = \"openai\"\n", `"b" listed twice`},
	} {
		_, err := Parse("config.toml", []byte(tc.doc))
		var e *Error
		if !errors.As(err, &e) || e.Key != "profiles.a.fallback" || e.Line != 3 || !strings.Contains(e.Msg, tc.msg) {
			t.Errorf("%q: got %v, want line 3 profiles.a.fallback: …%s…", tc.doc, err, tc.msg)
		}
	}
}

func TestParseTelemetry(t *testing.T) {
	c, err := Parse("config.toml", []byte("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\nlog_content = true\n"))
	if err != nil || c.Telemetry.OTLPEndpoint != "http://127.0.0.1:4318" || !c.Telemetry.LogContent {
		t.Fatalf("%+v %v", c.Telemetry, err)
	}
	_, err = Parse("config.toml", []byte("[telemetry]\notlp_endpoint = \"localhost:4318\"\n"))
	var e *Error
	if !errors.As(err, &e) || e.Key != "telemetry.otlp_endpoint" || e.Line != 2 {
		t.Fatalf("err %v", err)
	}
}

func TestLSP(t *testing.T) {
	c, err := Parse("c.toml", []byte("[lsp]\nwait = \"5s\"\nidle_timeout = \"1m\"\n[lsp.servers.go]\ncommand = [\"/opt/gopls\", \"-remote=auto\"]\n[lsp.servers.rust]\nenabled = false\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := LSP{Wait: 5 * time.Second, IdleTimeout: time.Minute, Servers: map[string][]string{"go": {"/opt/gopls", "-remote=auto"}, "rust": {}}}
	if !reflect.DeepEqual(c.LSP, want) {
		t.Errorf("lsp = %+v, want %+v", c.LSP, want)
	}
	if d := Default().LSP; d.Off || d.Wait != 2*time.Second || d.IdleTimeout != 10*time.Minute {
		t.Errorf("default lsp = %+v", d)
	}
	if c, _ := Parse("c.toml", []byte("[lsp]\nenabled = false\n")); !c.LSP.Off {
		t.Error("enabled = false left it on")
	}
	for _, tc := range []struct{ src, want string }{
		{"[lsp]\nwait = \"soon\"\n", `c.toml:2: key "lsp.wait": `},
		{"[lsp]\nwait = \"0s\"\n", `c.toml:2: key "lsp.wait": invalid duration "0s": must be greater than zero`},
		{"[lsp]\nwait = 2\n", `c.toml:2: key "lsp.wait": `},
		{"[lsp.servers.cobol]\ncommand = [\"x\"]\n", `c.toml:1: key "lsp.servers.cobol": no language "cobol" (have go, typescript, python, rust, c)`},
		{"[lsp.servers.go]\ncommand = \"gopls\"\n", `c.toml:2: key "lsp.servers.go.command": `},
		{"[lsp.servers.go]\ncommand = []\n", `c.toml:2: key "lsp.servers.go.command": names no program`},
		{"[lsp]\nidel_timeout = \"1m\"\n", `c.toml:2: key "lsp.idel_timeout": unknown key (did you mean "idle_timeout"?)`},
	} {
		_, err := Parse("c.toml", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %s…", tc.src, err, tc.want)
		}
	}
}
