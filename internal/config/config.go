package config

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"meka.dev/meka/permission"
)

// Provider names the model adapter a profile talks to.
type Provider string

const (
	ProviderOpenAI Provider = "openai"
	// ProviderOpenAIResponses is OpenAI's Responses API, which keeps a
	// reasoning model's reasoning from one request to the next.
	ProviderOpenAIResponses Provider = "openai-responses"
	ProviderAnthropic       Provider = "anthropic"
	// ProviderGemini is Google's Gemini API, spoken natively.
	ProviderGemini Provider = "gemini"
	// ProviderScript replays a script file instead of calling a model.
	ProviderScript Provider = "script"
)

// Providers lists every provider a profile may name.
var Providers = []Provider{ProviderOpenAI, ProviderOpenAIResponses, ProviderAnthropic, ProviderGemini, ProviderScript}

// providerNames lists Providers in words: "a, b or c".
func providerNames() string {
	names := make([]string, len(Providers))
	for i, p := range Providers {
		names[i] = string(p)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DefaultModel is the model a profile of provider p runs when it names none.
// It is empty for the script provider, which has no model.
func DefaultModel(p Provider) string {
	switch p {
	case ProviderOpenAI:
		return "gpt-4.1"
	case ProviderOpenAIResponses:
		return "gpt-5.5"
	case ProviderGemini:
		return "gemini-2.5-pro"
	case ProviderAnthropic:
		return "claude-sonnet-4-5"
	}
	return ""
}

// DefaultKeyEnv is the environment variable that holds provider p's API key
// when a profile names none in api_key_env.
func DefaultKeyEnv(p Provider) string {
	switch p {
	case ProviderOpenAI, ProviderOpenAIResponses:
		return "OPENAI_API_KEY"
	case ProviderGemini:
		return "GEMINI_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	}
	return ""
}

// Plan names a plan dialect: the tools and rules a session tracks its work with.
type Plan string

const (
	PlanChecklist  Plan = "checklist"
	PlanUpdatePlan Plan = "update_plan"
	PlanWriteTodos Plan = "write_todos"
)

// Plans lists every plan dialect.
var Plans = []Plan{PlanChecklist, PlanUpdatePlan, PlanWriteTodos}

// Config is meka's configuration: a config file's content over Default.
// Values are validated; a Config from Parse or Default is ready to use.
type Config struct {
	// File is the file the config was read from; empty for Default.
	File string
	// DefaultProfile names the profile a session gets when it names none.
	DefaultProfile string
	// Profiles are keyed by name.
	Profiles map[string]Profile
	// Models are the [models."ID"] tables, keyed by model id.
	Models      map[string]Model
	Permissions Permissions
	Tools       Tools
	Schedule    Schedule
	Serve       Serve
	MCP         MCP
	// Instructions is the [instructions] table: how AGENTS.md files are read.
	Instructions Instructions
	Store        Store
	Agents       Agents
	Telemetry    Telemetry
	// Hooks is the [hooks] table as decoded: Claude Code's hooks object
	// (event names to [{matcher, hooks}] entries) and meka's confine key.
	Hooks       map[string]any
	Checkpoints Checkpoints
	LSP         LSP
	// Settings are the keys the file set, in document order; empty for
	// Default.
	Settings []Setting
}

// Model is a [models."ID"] table: what a model id costs, in US dollars
// per million tokens. Input and output prices are always set; a cache
// price is nil when the file leaves it to the built-in table (or, for a
// model not in it, to the input price).
type Model struct {
	InputPrice, OutputPrice         float64
	CacheReadPrice, CacheWritePrice *float64
}

// Checkpoints is the [checkpoints] table: what turns change in the
// workspace is recorded so that a rewind can put the files back.
type Checkpoints struct {
	// Off turns them off (enabled = false).
	Off bool
	// MaxBytes bounds them, the oldest pruned first; 0 means meka's default.
	MaxBytes int64
	// MaxFileBytes skips larger files (named); 0 means meka's default.
	MaxFileBytes int64
}

// LSP is the [lsp] table: the language servers asked for a file's
// diagnostics after file_write and file_edit change it.
type LSP struct {
	// Off turns them off (enabled = false): no server, no diagnostics tool.
	Off bool
	// Wait bounds how long a change waits for a server's diagnostics.
	Wait time.Duration
	// IdleTimeout stops a server nobody asked for that long.
	IdleTimeout time.Duration
	// Servers replaces a language's command line, by language name; an
	// empty one (enabled = false) turns that language off.
	Servers map[string][]string
}

// LSPLanguages are the names [lsp.servers.NAME] takes, internal/lsp's
// languages.
var LSPLanguages = []string{"go", "typescript", "python", "rust", "c"}

// Telemetry is the [telemetry] table: OpenTelemetry export, off unless
// an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT.
type Telemetry struct {
	// OTLPEndpoint is the OTLP/HTTP base URL; empty leaves it to the
	// OTEL_EXPORTER_OTLP_* variables.
	OTLPEndpoint string
	// LogContent puts prompts, replies and tool arguments on spans.
	LogContent bool
}

// Agents is the [agents] table: sub-agents.
type Agents struct {
	// MaxParallel bounds a session's sub-agents running at once.
	MaxParallel int
	// MaxDepth is how deep sub-agents nest: 1 lets a session spawn
	// sub-agents that spawn none, 0 offers no agent_* tools at all.
	MaxDepth int
}

// Profile is a model endpoint and how to talk to it.
type Profile struct {
	Name     string
	Provider Provider
	// Model is the provider's model id; DefaultModel(Provider) when the
	// file names none.
	Model string
	// BaseURL overrides the provider's endpoint; empty means its default.
	BaseURL string
	// BaseURLEnv names the environment variable BaseURL came from
	// (OPENAI_BASE_URL, ANTHROPIC_BASE_URL); empty when it came from the
	// file or is the provider's default.
	BaseURLEnv string
	// APIKeyEnv names the environment variable holding the API key;
	// DefaultKeyEnv(Provider) when the file names none. The key itself is
	// never in the config.
	APIKeyEnv string
	// ContextWindow, MaxOutputTokens and MaxRequestBytes are limits in
	// tokens and bytes; 0 means not set (the adapter's own default).
	ContextWindow   int
	MaxOutputTokens int
	MaxRequestBytes int
	// Vision says whether the model accepts images; true unless set false.
	Vision bool
	// Script is the script file the script provider replays, resolved
	// against the config file's directory.
	Script string
	// Plan overrides Tools.Plan for sessions on this profile; empty means
	// not set. Use Config.PlanFor.
	Plan Plan
	// ReasoningEffort is passed to the provider as is; empty means its
	// default. Which tiers a model accepts is the provider's business.
	ReasoningEffort string
	// ConnectTimeout, FirstTokenTimeout and StreamIdleTimeout bound the
	// waits for the provider: connecting, the first streamed event of a
	// reply, and the gap between two events. 0 means no bound.
	ConnectTimeout    time.Duration
	FirstTokenTimeout time.Duration
	StreamIdleTimeout time.Duration
	// Fallback names the profiles a turn goes on with, in order, when
	// this one's provider fails with a failure that may pass (429, 5xx,
	// overload, a connection failure) after its retries.
	Fallback []string
}

// Default waits for a provider, as a profile gets them unless it says.
const (
	DefaultConnectTimeout    = 10 * time.Second
	DefaultFirstTokenTimeout = 120 * time.Second
	DefaultStreamIdleTimeout = 120 * time.Second
)

// newProfile is a profile with every default a file may override.
func newProfile(name string) Profile {
	return Profile{Name: name, Vision: true, ConnectTimeout: DefaultConnectTimeout,
		FirstTokenTimeout: DefaultFirstTokenTimeout, StreamIdleTimeout: DefaultStreamIdleTimeout}
}

// Permissions is the [permissions] table.
type Permissions struct {
	// Enabled lists the levels a session may be put at, lowest first.
	Enabled []permission.Level
	// Default is a new session's level; always among Enabled.
	Default permission.Level
	// Approvals is whether a new session asks before tools that need more
	// than it holds.
	Approvals bool
	// Network opens the network to confined commands (package installs
	// at workspace); closed by default.
	Network bool
	// EnvPassthrough are globs (path.Match syntax) of environment
	// variables confined commands get besides the fixed allow-list.
	EnvPassthrough []string
}

// IsEnabled reports whether a session may be put at level l.
func (p Permissions) IsEnabled(l permission.Level) bool { return slices.Contains(p.Enabled, l) }

// Tools is the [tools] table.
type Tools struct {
	// Deny holds path.Match patterns; a tool whose name matches one is
	// removed from every request.
	Deny []string
	// Plan is the plan dialect sessions use unless their profile says.
	Plan Plan
	// PlanCheckCompletion is whether a turn may not end with open items.
	PlanCheckCompletion bool
	// MaxCompletionNudges caps the completion reminders of one turn of
	// update_plan and write_todos (at most three of them in a row without
	// a tool call); 0 means no ceiling at all.
	MaxCompletionNudges int
	// ToolPermissions overrides the level a built-in tool needs, by name.
	ToolPermissions map[string]permission.Level
}

// Denied reports whether the tool named name is filtered out by Deny.
func (t Tools) Denied(name string) bool {
	for _, p := range t.Deny {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Level returns the level the tool named name needs: its override from
// ToolPermissions, else builtin.
func (t Tools) Level(name string, builtin permission.Level) permission.Level {
	if l, ok := t.ToolPermissions[name]; ok {
		return l
	}
	return builtin
}

// Schedule is the [schedule] table.
type Schedule struct {
	// Enabled false hides the schedule tools and stops the scheduler.
	Enabled bool
	// PollInterval is how often due jobs are checked.
	PollInterval time.Duration
	// MissedGrace is how late a one-shot job may be and still fire.
	MissedGrace time.Duration
	// GateTimeout is the wall-clock budget of a gate probe.
	GateTimeout time.Duration
	// MaxJobs is the per-session ceiling on jobs.
	MaxJobs int
	// MaxConsecutiveFires is the per-session ceiling on turns in one sweep.
	MaxConsecutiveFires int
	// ClaimLease is how long a host's claim on an occurrence is good for;
	// always longer than GateTimeout.
	ClaimLease time.Duration
	// Timezone is the IANA zone cron expressions are read in, as written;
	// empty means the host's local zone.
	Timezone string
	// Location is Timezone loaded; time.Local when Timezone is empty.
	Location *time.Location
}

// Instructions is the [instructions] table.
type Instructions struct {
	// FallbackFiles are more names an instruction file may have, tried
	// after AGENTS.override.md, AGENTS.md and CLAUDE.md.
	FallbackFiles []string
	// MaxBytes bounds the project instructions in the system prompt; 0
	// means the default (32 KiB).
	MaxBytes int
}

// Serve is the [serve] table, for long-running hosts (meka serve, meka acp).
type Serve struct {
	// Listen is the HTTP API's host:port.
	Listen string
	// IdleTimeout is how long a session may go untouched before a sweep
	// releases it.
	IdleTimeout time.Duration
	// IdleSweepInterval is how often that sweep runs.
	IdleSweepInterval time.Duration
	// RelayProviderErrors is whether a provider's own error text reaches
	// clients, capped, beside meka's sentence.
	RelayProviderErrors bool
	// Webhooks are the endpoints meka serve posts feed events to, by name.
	Webhooks []Webhook
	// FeedRetention is how long meka serve keeps feed events (0: forever);
	// a client resuming from before it gets feed.reset.
	FeedRetention time.Duration
	// TLSCert and TLSKey are PEM files, resolved against the config file's
	// directory; set both to serve HTTPS. A listen address beyond loopback
	// requires them.
	TLSCert, TLSKey string
	// StreamHeartbeat is how often an idle event stream gets a keepalive
	// comment, and StreamWriteTimeout how long one write to a stream may
	// take before its client counts as gone and the stream is released.
	StreamHeartbeat, StreamWriteTimeout time.Duration
}

// Webhook is one [serve.webhooks.NAME] endpoint.
type Webhook struct {
	Name string
	URL  string
	// SecretFile holds the endpoint's whsec_ secret, resolved against the
	// config file's directory; meka serve refuses a file others can read.
	SecretFile string
	// Events are the feed event types sent; "*" sends all.
	Events []string
}

// Store is the [store] table: where sessions, their locks and jobs are
// kept.
type Store struct {
	// URL is a PostgreSQL database shared by hosts on several machines
	// (postgres:// or postgresql://); empty means the SQLite file in the
	// data directory. $MEKA_DATABASE_URL overrides it.
	URL string
}

// MCP is the [mcp] table: the MCP servers meka connects to as a client.
type MCP struct {
	// DefaultPermission is the level of a server tool that neither its
	// server's config nor its readOnlyHint settles.
	DefaultPermission permission.Level
	// Servers are keyed by name.
	Servers map[string]MCPServer
	// ToolSearch is "auto" (the default), "always" or "never": whether the
	// servers' tools are offered through tool_search rather than whole;
	// auto does so once their schemas pass ToolSearchBudget bytes.
	ToolSearch       string
	ToolSearchBudget int
}

// Tool search modes, and the default budget of MCP tool schemas sent
// whole.
const (
	ToolSearchAuto          = "auto"
	ToolSearchAlways        = "always"
	ToolSearchNever         = "never"
	DefaultToolSearchBudget = 10 << 10
)

// MCPServer is one [mcp.servers.NAME] table. Exactly one of Command and URL
// is set.
type MCPServer struct {
	Name string
	// Command, Args and Env start a server on stdio.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach a server over streamable HTTP.
	URL     string
	Headers map[string]string
	// Permission is the level of every tool of this server that
	// ToolPermissions does not name; nil means not set.
	Permission *permission.Level
	// ToolPermissions sets the level of single tools, by the server's name
	// for them.
	ToolPermissions map[string]permission.Level
	// Disabled servers are listed by /mcp and never started (enabled =
	// false).
	Disabled bool
	// StartupTimeout bounds the connection and its initialize (default
	// 10s); ToolTimeout bounds one call (default 60s).
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// EnabledTools, when set, are the only tools of the server offered;
	// DisabledTools are never offered. Both hold the server's names.
	EnabledTools  []string
	DisabledTools []string
	// Required servers must start: one that does not fails --oneshot.
	Required bool
}

// Defaults of [mcp.servers.NAME].
const (
	DefaultMCPStartupTimeout = 10 * time.Second
	DefaultMCPToolTimeout    = 60 * time.Second
)

// Default returns the configuration with every default and no profiles.
func Default() *Config {
	return &Config{
		Profiles: map[string]Profile{},
		Models:   map[string]Model{},
		Permissions: Permissions{
			Enabled: slices.Clone(permission.Levels),
			Default: permission.Workspace,
		},
		Tools: Tools{
			Plan:                PlanChecklist,
			PlanCheckCompletion: true,
			// Nine a turn, as the checklist allows.
			MaxCompletionNudges: 9,
			ToolPermissions:     map[string]permission.Level{},
		},
		Schedule: Schedule{
			Enabled:             true,
			PollInterval:        10 * time.Second,
			MissedGrace:         24 * time.Hour,
			GateTimeout:         30 * time.Second,
			MaxJobs:             50,
			MaxConsecutiveFires: 5,
			ClaimLease:          time.Hour,
			Location:            time.Local,
		},
		Serve: Serve{
			Listen:              "127.0.0.1:7878",
			IdleTimeout:         24 * time.Hour,
			IdleSweepInterval:   5 * time.Minute,
			RelayProviderErrors: true,
			FeedRetention:       7 * 24 * time.Hour,
			StreamHeartbeat:     15 * time.Second,
			StreamWriteTimeout:  30 * time.Second,
		},
		MCP: MCP{
			DefaultPermission: permission.Unrestricted,
			Servers:           map[string]MCPServer{},
			ToolSearch:        ToolSearchAuto,
			ToolSearchBudget:  DefaultToolSearchBudget,
		},
		Agents: Agents{MaxParallel: 4, MaxDepth: 1},
		LSP:    LSP{Wait: 2 * time.Second, IdleTimeout: 10 * time.Minute, Servers: map[string][]string{}},
	}
}

var (
	// ErrNoProfile means no profile is configured at all; NoProfileHelp
	// says how to configure one.
	ErrNoProfile = errors.New("no model profile configured")
	// ErrUnknownProfile means a profile was asked for by a name the
	// configuration does not have.
	ErrUnknownProfile = errors.New("unknown profile")
	// ErrNoDefaultProfile means several profiles exist, none was asked for
	// and default_profile does not pick one.
	ErrNoDefaultProfile = errors.New("no default profile")
)

// ProfileNames returns the names of the configured profiles, sorted.
func (c *Config) ProfileNames() []string {
	return slices.Sorted(maps.Keys(c.Profiles))
}

// Profile returns the profile called name or, when name is empty, the
// default one: default_profile, else the only profile there is.
func (c *Config) Profile(name string) (Profile, error) {
	if len(c.Profiles) == 0 {
		if name != "" {
			return Profile{}, fmt.Errorf("find profile %q: %w", name, ErrNoProfile)
		}
		return Profile{}, ErrNoProfile
	}
	if name == "" {
		name = c.DefaultProfile
	}
	if name == "" {
		if len(c.Profiles) == 1 {
			for _, p := range c.Profiles {
				return p, nil
			}
		}
		return Profile{}, fmt.Errorf("%w: %d profiles (%s) and no default_profile; name one with --profile or set default_profile",
			ErrNoDefaultProfile, len(c.Profiles), strings.Join(c.ProfileNames(), ", "))
	}
	p, ok := c.Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("%w %q (have %s)", ErrUnknownProfile, name, strings.Join(c.ProfileNames(), ", "))
	}
	return p, nil
}

// ResolveProfile is Profile with the environment's profiles: a name that
// no configured profile has but that names a provider ("openai",
// "anthropic") is that provider's profile from the environment (see
// EnvProfile), and when the configuration has no profiles, the provider key
// in the environment read through getenv supplies the profile "default"
// (see ZeroConfigProfile).
func (c *Config) ResolveProfile(name string, getenv func(string) string) (Profile, error) {
	if _, ok := c.Profiles[name]; !ok && IsEnvProvider(name) {
		return EnvProfile(Provider(name), getenv), nil
	}
	if len(c.Profiles) > 0 {
		p, err := c.Profile(name)
		if err == nil && p.BaseURL == "" && (IsEnvProvider(string(p.Provider)) || p.Provider == ProviderOpenAIResponses) {
			// The environment's endpoint for a profile whose file sets none
			// (defaults < file < environment).
			if v := getenv(BaseURLEnv(p.Provider)); v != "" {
				p.BaseURL, p.BaseURLEnv = v, BaseURLEnv(p.Provider)
			}
		}
		return p, err
	}
	p, ok := ZeroConfigProfile(getenv)
	if !ok {
		return Profile{}, ErrNoProfile
	}
	if name != "" && name != p.Name {
		return Profile{}, fmt.Errorf("%w %q (have %s, from the environment; openai and anthropic name the providers' own)", ErrUnknownProfile, name, p.Name)
	}
	return p, nil
}

// NeedsKey reports whether the profile cannot work without an API key:
// Anthropic always, OpenAI at its own endpoint. A local OpenAI-compatible
// server (a base_url) may take none.
func (p Profile) NeedsKey() bool {
	switch p.Provider {
	case ProviderAnthropic, ProviderGemini:
		return true
	case ProviderOpenAI, ProviderOpenAIResponses:
		return p.BaseURL == ""
	}
	return false
}

// PlanFor returns the plan dialect of sessions on profile p: p's own, else
// the [tools] one.
func (c *Config) PlanFor(p Profile) Plan {
	if p.Plan != "" {
		return p.Plan
	}
	return c.Tools.Plan
}
