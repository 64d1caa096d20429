package config

import (
	"bytes"
	"fmt"
	"os"

	"github.com/pelletier/go-toml/v2"
)

// The file schema: what a config file may contain, as go-toml decodes it.
// Every leaf is a pointer or a collection so "not set" is visible and the
// defaults live in Default alone. Durations and levels are plain strings
// here: decoding them through TextUnmarshaler would let go-toml feed it
// integers and booleans, and lose the position when it fails. They are
// converted, with positions, in convert.go. The `want` tags word type errors.

type fileConfig struct {
	DefaultProfile *string                `toml:"default_profile"`
	Profiles       map[string]fileProfile `toml:"profiles" want:"a table of profiles, one [profiles.NAME] table each"`
	Models         map[string]fileModel   `toml:"models" want:"a table of model ids, one [models.\"ID\"] table each"`
	Permissions    filePermissions        `toml:"permissions"`
	Tools          fileTools              `toml:"tools"`
	Schedule       fileSchedule           `toml:"schedule"`
	Serve          fileServe              `toml:"serve"`
	Instructions   fileInstructions       `toml:"instructions"`
	MCP            fileMCP                `toml:"mcp"`
	Store          fileStore              `toml:"store"`
	Agents         fileAgents             `toml:"agents"`
	Telemetry      fileTelemetry          `toml:"telemetry"`
	// Hooks is Claude Code's hooks object in TOML; its shape is checked
	// where it is read (internal/hooks), which knows Claude Code's format.
	Hooks       map[string]any  `toml:"hooks" want:"a table of hook events, Claude Code's \"hooks\" object in TOML ([[hooks.PreToolUse]] tables)"`
	Checkpoints fileCheckpoints `toml:"checkpoints"`
	LSP         fileLSP         `toml:"lsp"`
}

type fileLSP struct {
	Enabled     *bool                    `toml:"enabled"`
	Wait        *string                  `toml:"wait" want:"a duration string such as \"2s\""`
	IdleTimeout *string                  `toml:"idle_timeout" want:"a duration string such as \"10m\""`
	Servers     map[string]fileLSPServer `toml:"servers" want:"a table of languages, one [lsp.servers.NAME] table each (go, typescript, python, rust or c)"`
}

type fileLSPServer struct {
	Command []string `toml:"command" want:"an array of strings, the program and its arguments, such as [\"gopls\"]"`
	Enabled *bool    `toml:"enabled"`
}

type fileCheckpoints struct {
	Enabled      *bool  `toml:"enabled"`
	MaxBytes     *int64 `toml:"max_bytes" want:"a number of bytes"`
	MaxFileBytes *int64 `toml:"max_file_bytes" want:"a number of bytes"`
}

type fileTelemetry struct {
	OTLPEndpoint *string `toml:"otlp_endpoint" want:"an OTLP/HTTP base URL, such as \"http://127.0.0.1:4318\""`
	LogContent   *bool   `toml:"log_content"`
}

type fileAgents struct {
	MaxParallel *int64 `toml:"max_parallel" want:"a number of sub-agents"`
	MaxDepth    *int64 `toml:"max_depth" want:"a number of levels, 0 for no sub-agents"`
}

type fileProfile struct {
	Provider          *string  `toml:"provider" want:"a provider name (\"openai\", \"openai-responses\", \"anthropic\", \"gemini\" or \"script\")"`
	Model             *string  `toml:"model"`
	BaseURL           *string  `toml:"base_url"`
	APIKeyEnv         *string  `toml:"api_key_env" want:"the name of an environment variable, such as \"OPENAI_API_KEY\""`
	ContextWindow     *int64   `toml:"context_window" want:"a number of tokens"`
	MaxOutputTokens   *int64   `toml:"max_output_tokens" want:"a number of tokens"`
	MaxRequestBytes   *int64   `toml:"max_request_bytes" want:"a number of bytes"`
	Vision            *bool    `toml:"vision"`
	Script            *string  `toml:"script" want:"the path of a script file"`
	Plan              *string  `toml:"plan" want:"a plan name (\"checklist\", \"update_plan\" or \"write_todos\")"`
	ReasoningEffort   *string  `toml:"reasoning_effort"`
	ConnectTimeout    *string  `toml:"connect_timeout" want:"a duration such as \"10s\""`
	FirstTokenTimeout *string  `toml:"first_token_timeout" want:"a duration such as \"2m\""`
	StreamIdleTimeout *string  `toml:"stream_idle_timeout" want:"a duration such as \"2m\""`
	Fallback          []string `toml:"fallback" want:"an array of profile names, such as [\"claude\"]"`
}

type fileModel struct {
	InputPrice      *float64 `toml:"input_price" want:"a price in US dollars per million tokens, such as 2.5"`
	OutputPrice     *float64 `toml:"output_price" want:"a price in US dollars per million tokens, such as 10"`
	CacheReadPrice  *float64 `toml:"cache_read_price" want:"a price in US dollars per million tokens, such as 0.25"`
	CacheWritePrice *float64 `toml:"cache_write_price" want:"a price in US dollars per million tokens, such as 3.75"`
}

type filePermissions struct {
	Enabled   []string `toml:"enabled" want:"an array of permission level names (\"none\", \"read\", \"workspace\", \"unrestricted\")"`
	Default   *string  `toml:"default" want:"a permission level name (\"none\", \"read\", \"workspace\" or \"unrestricted\")"`
	Approvals *bool    `toml:"approvals"`
	Network   *bool    `toml:"network"`
	// EnvPassthrough are variable name globs confined commands get.
	EnvPassthrough []string `toml:"env_passthrough" want:"an array of environment variable name globs, such as \"NPM_CONFIG_CACHE\""`
}

type fileTools struct {
	Deny                []string          `toml:"deny" want:"an array of tool name patterns, such as \"shell_*\""`
	Plan                *string           `toml:"plan" want:"a plan name (\"checklist\", \"update_plan\" or \"write_todos\")"`
	PlanCheckCompletion *bool             `toml:"plan_check_completion"`
	MaxCompletionNudges *int64            `toml:"max_completion_nudges" want:"an integer, 0 for no ceiling"`
	ToolPermissions     map[string]string `toml:"tool_permissions" want:"a table of tool names to permission level names" elem:"a permission level name (\"none\", \"read\", \"workspace\" or \"unrestricted\")"`
}

type fileSchedule struct {
	Enabled             *bool   `toml:"enabled"`
	PollInterval        *string `toml:"poll_interval" want:"a duration string such as \"30m\" or \"1h 30m\""`
	MissedGrace         *string `toml:"missed_grace" want:"a duration string such as \"30m\" or \"1h 30m\""`
	GateTimeout         *string `toml:"gate_timeout" want:"a duration string such as \"30m\" or \"1h 30m\""`
	MaxJobs             *int64  `toml:"max_jobs" want:"a number of jobs"`
	MaxConsecutiveFires *int64  `toml:"max_consecutive_fires" want:"a number of turns"`
	ClaimLease          *string `toml:"claim_lease" want:"a duration string such as \"30m\" or \"1h 30m\""`
	Timezone            *string `toml:"timezone" want:"an IANA time zone name, such as \"Europe/Berlin\""`
}

type fileServe struct {
	Listen              *string                `toml:"listen" want:"a host:port address, such as \"127.0.0.1:7878\""`
	IdleTimeout         *string                `toml:"idle_timeout" want:"a duration string such as \"30m\" or \"1h 30m\""`
	IdleSweepInterval   *string                `toml:"idle_sweep_interval" want:"a duration string such as \"30m\" or \"1h 30m\""`
	RelayProviderErrors *bool                  `toml:"relay_provider_errors"`
	FeedRetention       *string                `toml:"feed_retention" want:"a duration string such as \"7d\" or \"36h\""`
	TLSCert             *string                `toml:"tls_cert" want:"the path of a PEM certificate file"`
	TLSKey              *string                `toml:"tls_key" want:"the path of a PEM private key file"`
	StreamHeartbeat     *string                `toml:"stream_heartbeat" want:"a duration string such as \"15s\""`
	StreamWriteTimeout  *string                `toml:"stream_write_timeout" want:"a duration string such as \"30s\""`
	Webhooks            map[string]fileWebhook `toml:"webhooks" want:"a table of webhooks, one [serve.webhooks.NAME] table each"`
}

type fileWebhook struct {
	URL        *string  `toml:"url" want:"an http or https URL"`
	SecretFile *string  `toml:"secret_file" want:"the path of a file holding a whsec_ secret"`
	Events     []string `toml:"events" want:"an array of event types, such as \"schedule.fired\""`
}

type fileStore struct {
	URL *string `toml:"url" want:"a PostgreSQL URL such as \"postgres://meka@db.example/meka\""`
}

type fileInstructions struct {
	FallbackFiles []string `toml:"fallback_files" want:"a list of file names, such as [\"RULES.md\"]"`
	MaxBytes      *int64   `toml:"max_bytes" want:"a number of bytes"`
}

type fileMCP struct {
	DefaultPermission *string                  `toml:"default_permission" want:"a permission level name (\"none\", \"read\", \"workspace\" or \"unrestricted\")"`
	Servers           map[string]fileMCPServer `toml:"servers" want:"a table of servers, one [mcp.servers.NAME] table each"`
	ToolSearch        *string                  `toml:"tool_search" want:"\"auto\", \"always\" or \"never\""`
	ToolSearchBudget  *int64                   `toml:"tool_search_budget" want:"a number of bytes"`
}

type fileMCPServer struct {
	Command         *string           `toml:"command"`
	Args            []string          `toml:"args"`
	Env             map[string]string `toml:"env"`
	URL             *string           `toml:"url"`
	Headers         map[string]string `toml:"headers"`
	Permission      *string           `toml:"permission" want:"a permission level name (\"none\", \"read\", \"workspace\" or \"unrestricted\")"`
	ToolPermissions map[string]string `toml:"tool_permissions" want:"a table of tool names to permission level names" elem:"a permission level name (\"none\", \"read\", \"workspace\" or \"unrestricted\")"`
	Enabled         *bool             `toml:"enabled"`
	StartupTimeout  *string           `toml:"startup_timeout" want:"a duration string such as \"10s\" or \"1m\""`
	ToolTimeout     *string           `toml:"tool_timeout" want:"a duration string such as \"60s\" or \"5m\""`
	EnabledTools    []string          `toml:"enabled_tools" want:"a list of the server's tool names"`
	DisabledTools   []string          `toml:"disabled_tools" want:"a list of the server's tool names"`
	Required        *bool             `toml:"required"`
}

// Load reads and parses the config file at path. A file that cannot be read
// gives the *os.PathError wrapped (errors.Is(err, fs.ErrNotExist) works);
// a file that is wrong gives an *Error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(path, data)
}

// Parse parses data, the content of the config file filename, over Default.
// filename is used in messages and to resolve a script path relative to
// the file. Every error is an *Error naming the file, line and key.
func Parse(filename string, data []byte) (*Config, error) {
	// Some editors start UTF-8 files with a byte order mark; TOML parsers
	// stop at it.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// The index doubles as the syntax check; on a syntax error go-toml's
	// decoder reports the same problem with its own position.
	idx, idxErr := indexKeys(data)
	if idxErr == nil {
		if err := checkKeys(filename, idx); err != nil {
			return nil, err
		}
	}
	var f fileConfig
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, decodeError(filename, err, idx)
	}
	if idxErr != nil { // go-toml accepted what the parser refused: report it
		return nil, &Error{File: filename, Msg: idxErr.Error(), Err: idxErr}
	}
	return convert(filename, &f, idx)
}
