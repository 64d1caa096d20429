package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/permission"
)

// Server is one configured server. Exactly one of Command and URL is set.
type Server struct {
	Name string
	// Command, Args and Env start a server on stdio; Env is added to the
	// manager's environment.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach a server over streamable HTTP; both may name
	// environment variables as ${VAR}, so tokens stay out of the file.
	URL     string
	Headers map[string]string
	// Permission is the level of the server's tools ToolPermissions does
	// not name; nil means not set.
	Permission      *permission.Level
	ToolPermissions map[string]permission.Level
	// Disabled servers are listed and never started.
	Disabled bool
	// StartupTimeout bounds a connection and its initialize;
	// ToolTimeout one call. Zero means the defaults (10s and 60s).
	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	// EnabledTools, when set, are the only tools offered; DisabledTools
	// are never offered. Both hold the server's own names.
	EnabledTools  []string
	DisabledTools []string
	// Required servers must start: Wait reports one that did not.
	Required bool
}

// Defaults of a Server.
const (
	DefaultStartupTimeout = 10 * time.Second
	DefaultToolTimeout    = 60 * time.Second
)

// Options configure a Manager.
type Options struct {
	Servers []Server
	// DefaultPermission is the level of a tool nothing else settles;
	// nil means unrestricted.
	DefaultPermission *permission.Level
	// Env is the environment stdio servers start from, already scrubbed
	// of credentials ("NAME=value" entries).
	Env []string
	// Getenv expands ${VAR} in URLs and headers; nil expands to "".
	Getenv func(string) string
	// Version is meka's, sent as the client's.
	Version string
	// Notify is told when a server's state changes, with a sentence that
	// names the server and never its command line or its error; a collision
	// of tool names is told too. Called from the manager's goroutines.
	Notify func(server string, severity Severity, text string)
	// MinBackoff and MaxBackoff bound the wait before a new connection
	// after one failed or dropped: zero means 1s and 30s.
	MinBackoff, MaxBackoff time.Duration
	Logger                 *slog.Logger
}

// Severity is how much a notice matters.
type Severity string

const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
)

// State is where a server's connection is.
type State string

const (
	StateDisabled  State = "disabled"
	StateStarting  State = "starting"
	StateConnected State = "connected"
	StateFailed    State = "failed"
)

// Status is a server as /mcp shows it. Err is for the log only: it may
// carry a command line or a path, and never travels to a client; Reason
// says why the server failed in words that cannot.
type Status struct {
	Name     string
	State    State
	Tools    int
	Prompts  int
	Required bool
	Err      error
	Reason   string
	// Stderr is the end of a stdio server's standard error, for -v.
	Stderr string
}

// Manager holds the connections to the configured servers. Start starts
// them; Close stops them. It is safe for concurrent use.
type Manager struct {
	opts    Options
	servers []*server // sorted by name
	byName  map[string]*server
	// version moves whenever the set of tools changes.
	version atomic.Uint64

	mu      sync.Mutex // guards tools, prompts, started and changed
	tools   []*remoteTool
	prompts []Prompt
	started bool
	changed chan struct{} // closed at the next change of the tool set

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a manager of the servers opts names. It starts nothing.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Second
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	m := &Manager{opts: opts, byName: make(map[string]*server)}
	for _, cfg := range opts.Servers {
		if cfg.StartupTimeout <= 0 {
			cfg.StartupTimeout = DefaultStartupTimeout
		}
		if cfg.ToolTimeout <= 0 {
			cfg.ToolTimeout = DefaultToolTimeout
		}
		s := &server{m: m, cfg: cfg, ready: make(chan struct{}), state: StateStarting, stderr: newTail(stderrTail)}
		if cfg.Disabled {
			s.state = StateDisabled
			close(s.ready)
		}
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
	}
	sort.Slice(m.servers, func(i, j int) bool { return m.servers[i].cfg.Name < m.servers[j].cfg.Name })
	return m
}

// Start connects to every enabled server in parallel and returns at once;
// the connections live until Close. A second Start does nothing.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, s := range m.servers {
		if s.cfg.Disabled {
			continue
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(ctx)
		}()
	}
}

// ErrRequired is what Wait returns when a required server did not start.
var ErrRequired = errors.New("required MCP server did not start")

// Wait blocks until every enabled server has connected or failed its
// first start (each bounded by its startup_timeout), or ctx ends. It
// returns an error naming the required servers that did not connect.
func (m *Manager) Wait(ctx context.Context) error {
	for _, s := range m.servers {
		select {
		case <-s.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var missing []string
	for _, s := range m.servers {
		if s.cfg.Required && s.status().State != StateConnected {
			missing = append(missing, s.cfg.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrRequired, strings.Join(missing, ", "))
	}
	return nil
}

// Close disconnects every server and stops their processes.
func (m *Manager) Close() error {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	return nil
}

// Status returns every configured server's state, sorted by name.
func (m *Manager) Status() []Status {
	out := make([]Status, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.status()
	}
	return out
}

// Configured reports whether any server is configured.
func (m *Manager) Configured() bool { return m != nil && len(m.servers) > 0 }

// Version moves whenever the set of tools changes.
func (m *Manager) Version() uint64 { return m.version.Load() }

// rebuild recomputes the tool and prompt sets from every server's lists,
// refusing names that collide, and moves the version.
func (m *Manager) rebuild() {
	var tools []*remoteTool
	var prompts []Prompt
	seen := map[string]string{} // meka name -> server
	type collision struct{ server, what string }
	var collisions []collision
	for _, s := range m.servers {
		for _, t := range s.toolList() {
			if other, ok := seen[t.name]; ok {
				collisions = append(collisions, collision{s.cfg.Name, fmt.Sprintf("%s (from %s, already taken by %s)", t.name, s.cfg.Name, other)})
				continue
			}
			seen[t.name] = s.cfg.Name
			tools = append(tools, t)
		}
		prompts = append(prompts, s.promptList()...)
	}
	// By name, the order a session's record keeps, so that recording the
	// set a session was offered does not reorder it.
	slices.SortStableFunc(tools, func(a, b *remoteTool) int { return strings.Compare(a.name, b.name) })
	m.mu.Lock()
	changed := !sameTools(m.tools, tools) || !slices.EqualFunc(m.prompts, prompts, func(a, b Prompt) bool { return a.Name == b.Name })
	m.tools, m.prompts = tools, prompts
	if changed {
		m.version.Add(1)
		if m.changed != nil {
			close(m.changed)
			m.changed = nil
		}
	}
	m.mu.Unlock()
	for _, c := range collisions {
		m.opts.Logger.Warn("mcp: tool name collision", "tool", c.what)
		m.notify(c.server, SeverityWarning, "MCP tool "+c.what+" is not offered: two tools would share its name")
	}
}

// Changed returns a channel closed at the next change of the tool or
// prompt set.
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

func sameTools(a, b []*remoteTool) bool {
	return slices.EqualFunc(a, b, func(x, y *remoteTool) bool { return x == y })
}

// ToolNames returns the names, as the model sees them, of the tools server
// offers now, sorted (meka doctor lists them).
func (m *Manager) ToolNames(server string) []string {
	var names []string
	for _, t := range m.currentTools() {
		if t.server == server {
			names = append(names, t.name)
		}
	}
	slices.Sort(names)
	return names
}

func (m *Manager) currentTools() []*remoteTool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tools
}

func (m *Manager) notify(server string, sev Severity, text string) {
	if m.opts.Notify != nil {
		m.opts.Notify(server, sev, text)
	}
}

// level resolves a server tool's level: the server's tool_permissions,
// its permission, the tool's readOnlyHint, then [mcp] default_permission.
// [tools.tool_permissions] for the full name comes first, applied by the
// permission gate as for every tool.
func (m *Manager) level(cfg Server, remote string, readOnly bool) permission.Level {
	if l, ok := cfg.ToolPermissions[remote]; ok {
		return l
	}
	if cfg.Permission != nil {
		return *cfg.Permission
	}
	if readOnly {
		return permission.Read
	}
	if m.opts.DefaultPermission != nil {
		return *m.opts.DefaultPermission
	}
	return permission.Unrestricted
}
