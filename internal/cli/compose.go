package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/internal/telemetry"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/openai"
	"meka.dev/meka/model/responses"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
)

// app is everything a subcommand that runs turns needs.
type app struct {
	cfg   *config.Config
	db    *database
	host  *host.Host
	sched *scheduling // nil when [schedule] enabled = false
	// mcp is nil when no MCP server is configured; notices says what it
	// tells about its servers.
	mcp     *mcp.Manager
	notices *mcpNotices
	// tel is nil when telemetry is off.
	tel *telemetry.Telemetry
	// lsp is nil when [lsp] turns language servers off.
	lsp *lsp.Manager
}

// startScheduler runs the scheduler loop until the returned stop; only
// long-lived hosts (meka acp, later the terminal and meka serve) call it.
func (a *app) startScheduler(ctx context.Context) (stop func()) {
	return a.sched.start(ctx)
}

func (a *app) close(ctx context.Context) {
	if a.host != nil {
		_ = a.host.Close(ctx)
	}
	if a.mcp != nil {
		_ = a.mcp.Close()
	}
	if a.lsp != nil {
		_ = a.lsp.Close()
	}
	if a.db != nil {
		_ = a.db.Close()
	}
	if a.tel != nil {
		// What the last turns left unsent, within a bound: an unreachable
		// collector must not hold meka open.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = a.tel.Shutdown(sctx)
		cancel()
	}
}

// newApp reads the config, checks that a profile can be resolved, opens
// the database and builds the host. Nothing is written before the config
// and flags are known to be good.
func (g *globals) newApp(ctx context.Context) (*app, error) {
	pre, err := g.prepare()
	if err != nil {
		return nil, err
	}
	return g.open(ctx, pre)
}

// prepared is what prepare checked: the config, and the permissions the
// flags ask for.
type prepared struct {
	cfg   *config.Config
	perms host.Permissions
}

// prepare reads the config and checks the profile, its key and the
// permission flags; it writes nothing and opens nothing, so a front door
// can answer its client while open runs.
func (g *globals) prepare() (*prepared, error) {
	cfg, err := g.loadConfig()
	if err != nil {
		return nil, err
	}
	prof, err := cfg.ResolveProfile(g.profile, g.getenv)
	if err != nil {
		if errors.Is(err, config.ErrNoProfile) {
			return nil, usageError("%v\n\n%s", err, config.NoProfileHelp())
		}
		return nil, usageError("%v", err)
	}
	if err := g.checkKey(prof); err != nil {
		return nil, usageError("%v", err)
	}
	if g.verbose > 0 {
		base, from := endpointOf(prof)
		g.logger().Info("profile", "name", prof.Name, "provider", string(prof.Provider), "model", prof.Model, "base_url", base, "base_url_from", from)
	}
	if cfg.PlanFor(cfg.Profiles[prof.Name]) == config.PlanChecklist {
		checklistNotice(g.stderr, cfg.Tools)
	}
	perms := host.Permissions{
		Enabled:    cfg.Permissions.Enabled,
		Default:    cfg.Permissions.Default,
		Approvals:  cfg.Permissions.Approvals,
		ToolLevels: cfg.Tools.ToolPermissions,
	}
	if g.permission != "" {
		l, err := permission.ParseLevel(g.permission)
		if err != nil {
			return nil, usageError("--permission: %v", err)
		}
		if !cfg.Permissions.IsEnabled(l) {
			return nil, usageError("--permission %s: the level is not enabled in [permissions] enabled", l)
		}
		perms.Default = l
	}
	if err := g.checkWorkspaceHome(perms.Default); err != nil {
		return nil, err
	}
	if err := g.refuseUnconfinable(perms.Default); err != nil {
		return nil, err
	}
	return &prepared{cfg: cfg, perms: perms}, nil
}

// admission decides session creations as the host opened on pre will,
// without it: a front door can answer one while the host opens.
func (g *globals) admission(pre *prepared) host.Admission {
	return host.Admission{Permissions: pre.perms, Home: g.getenv("HOME"), WorkspaceHome: g.workspaceHome,
		Profile: func(name string) (string, error) {
			p, err := pre.cfg.ResolveProfile(name, g.getenv)
			return p.Name, err
		}}
}

// open opens the database and builds the host on a prepared config.
func (g *globals) open(ctx context.Context, pre *prepared) (*app, error) {
	cfg, adm := pre.cfg, g.admission(pre)
	awaitSignals(ctx)
	sandbox.Warm(g.probeCacheDir()) // while the database opens
	db, err := g.openDB(ctx, cfg)
	if err != nil {
		return nil, err
	}
	dataDir, _ := g.dataDirectory()
	if dataDir != "" {
		// Temporary files and shell temp dirs a crashed meka left behind.
		_, _ = sandbox.CleanStale(filepath.Join(dataDir, "journal"), "", g.now())
	}
	log := g.logger()
	masked, shared := g.mekaHidden(dataDir)
	sc, err := g.newScheduling(cfg, db)
	if err != nil {
		db.Close()
		return nil, usageError("%v", err)
	}
	var observers []func(*host.Session) func(agent.Event)
	if endpoint := cmp.Or(cfg.Telemetry.OTLPEndpoint, g.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); endpoint != "" {
		// Only now: with telemetry off, none of it is set up.
		tel, err := telemetry.Start(ctx, telemetry.Options{Endpoint: endpoint, LogContent: cfg.Telemetry.LogContent, Version: version(),
			Headers: telemetry.ParseHeaders(g.getenv("OTEL_EXPORTER_OTLP_HEADERS"))})
		if err != nil {
			db.Close()
			return nil, usageError("%v", err)
		}
		g.tel = tel
		observers = append(observers, func(s *host.Session) func(agent.Event) {
			if ts, ok := s.Profile().Provider.(*telemetry.Session); ok {
				return ts.Bind(s.ID(), func() string { return s.Level().String() })
			}
			return func(agent.Event) {}
		})
	}
	agents := subagent.Sources{UserDir: config.AgentsDir(g.getenv), Logger: log}
	hookList := &hookLists{}
	hooksExt, err := g.hooksExtension(cfg, dataDir, g.mekaState(dataDir), masked, shared, hookList)
	if err != nil {
		db.Close()
		return nil, usageError("%v", err)
	}
	notices := &mcpNotices{}
	servers := g.newMCP(cfg, log, notices)
	languages := newLSP(cfg, masked, dataDir, log)
	h, err := host.New(host.Options{
		Store:    db.Sessions(),
		Profiles: func(name string) (host.Profile, error) { return g.buildProfile(cfg, name) },
		Tools:    builtinTools(cfg, g.mekaState(dataDir), masked, shared, dataDir, languages),
		Extensions: append(extensions(cfg), append(sc.extension(), agentsExtension(cfg, agents), memoryExtension(db),
			hooksExt)...),
		Definitions:   definitions(agents),
		Hooks:         hookList.get,
		Deny:          cfg.Tools.Deny,
		Permissions:   adm.Permissions,
		DataDir:       dataDir,
		Home:          adm.Home,
		WorkspaceHome: adm.WorkspaceHome,
		Confinement:   func() string { return sandbox.Describe(cfg.Permissions.Network) },
		MCP:           servers,
		ToolSearch:    cfg.MCP.ToolSearch,
		// The schemas' budget before tool_search stands in for them.
		ToolSearchBudget: cfg.MCP.ToolSearchBudget,
		Prompt:           g.promptOptions(cfg),
		Projects:         projectNames(db),
		Memories:         memoryList(db),
		Now:              g.now,
		Logger:           log,
		Observers:        observers,
		Checkpoints:      checkpointOptions(cfg, dataDir),
		// Sub-agents' worktrees go where meka -w puts them.
		Worktrees: &worktree.Options{Dir: filepath.Join(dataDir, "worktrees")},
	})
	if err != nil {
		db.Close()
		if languages != nil {
			languages.Close()
		}
		return nil, &exitError{code: 1, err: err}
	}
	sc.attach(h)
	notices.attach(h, nil)
	// The servers start with the host, in parallel, shared by every
	// session; a turn waits at most their startup_timeout.
	if servers != nil {
		servers.Start(ctx)
	}
	return &app{cfg: cfg, db: db, host: h, sched: sc, mcp: servers, notices: notices, tel: g.tel, lsp: languages}, nil
}

// promptOptions say where system prompts find the user's instructions and
// skills ($XDG_CONFIG_HOME/meka), and the zone they give dates in.
func (g *globals) promptOptions(cfg *config.Config) host.PromptOptions {
	o := host.PromptOptions{Home: g.getenv("HOME"), Fallbacks: cfg.Instructions.FallbackFiles,
		MaxBytes: cfg.Instructions.MaxBytes, Location: cfg.Schedule.Location}
	if p := config.DefaultPath(g.getenv); p != "" {
		o.UserDir = filepath.Dir(p)
	}
	return o
}

// buildProfile resolves a profile and builds its provider.
func (g *globals) buildProfile(cfg *config.Config, name string) (host.Profile, error) {
	p, err := cfg.ResolveProfile(name, g.getenv)
	if err != nil {
		return host.Profile{}, err
	}
	prov, err := g.provider(p)
	if err != nil {
		return host.Profile{}, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	ps := prices(cfg)
	book := g.rateBook(p.Name)
	prov = model.WithRateBook(model.WithPrices(prov, ps, p.Model), book)
	if len(p.Fallback) > 0 {
		// Each session gets its own chain: a move down it sticks to the
		// session until /profile or a new one.
		chain := []model.Profile{{Name: p.Name, Provider: prov, Model: p.Model}}
		for _, name := range p.Fallback {
			fp, err := cfg.ResolveProfile(name, g.getenv)
			if err != nil {
				return host.Profile{}, fmt.Errorf("profile %s: fallback: %w", p.Name, err)
			}
			fprov, err := g.provider(fp)
			if err != nil {
				return host.Profile{}, fmt.Errorf("profile %s: fallback %s: %w", p.Name, fp.Name, err)
			}
			chain = append(chain, model.Profile{Name: fp.Name, Provider: model.WithRateBook(model.WithPrices(fprov, ps, fp.Model), g.rateBook(fp.Name)), Model: fp.Model})
		}
		prov = model.NewFallback(chain)
	}
	if g.tel != nil {
		prov = g.tel.Provider(p.Name, p.Model, prov)
	}
	return host.Profile{
		Name: p.Name, Provider: prov, Model: p.Model,
		ContextWindow: p.ContextWindow, MaxOutputTokens: p.MaxOutputTokens, MaxRequestBytes: p.MaxRequestBytes, Vision: p.Vision,
		ReasoningEffort: p.ReasoningEffort, RateLimits: book.Last,
	}, nil
}

// rateBook is the rate-limit book of the profile named, one per process:
// every session on a profile shares what its responses said.
func (g *globals) rateBook(profile string) *model.RateBook {
	g.booksMu.Lock()
	defer g.booksMu.Unlock()
	if g.books == nil {
		g.books = map[string]*model.RateBook{}
	}
	b, ok := g.books[profile]
	if !ok {
		b = &model.RateBook{}
		g.books[profile] = b
	}
	return b
}

// httpClient is the HTTP client of the profiles connecting within connect,
// one per process: its connection pool outlives any session. A client per
// session left each closed session's idle keep-alive connection, a socket
// and two goroutines, until the transport's idle timeout.
func (g *globals) httpClient(connect time.Duration) *http.Client {
	g.booksMu.Lock()
	defer g.booksMu.Unlock()
	if g.clients == nil {
		g.clients = map[time.Duration]*http.Client{}
	}
	c, ok := g.clients[connect]
	if !ok {
		c = model.HTTPClient(connect)
		g.clients[connect] = c
	}
	return c
}

// prices is the built-in price table under the config's [models."ID"]
// tables; a cache price the file leaves out comes from the built-in row,
// else from the input price.
func prices(cfg *config.Config) model.Prices {
	ps := model.BuiltinPrices()
	for id, m := range cfg.Models {
		old, known := ps[id]
		p := model.Price{Input: m.InputPrice, Output: m.OutputPrice, CacheRead: m.InputPrice, CacheWrite: m.InputPrice}
		if known {
			p.CacheRead, p.CacheWrite = old.CacheRead, old.CacheWrite
		}
		if m.CacheReadPrice != nil {
			p.CacheRead = *m.CacheReadPrice
		}
		if m.CacheWritePrice != nil {
			p.CacheWrite = *m.CacheWritePrice
		}
		ps[id] = p
	}
	return ps
}

func (g *globals) provider(p config.Profile) (model.Provider, error) {
	key := ""
	if p.APIKeyEnv != "" {
		key = g.getenv(p.APIKeyEnv)
	}
	if err := g.checkKey(p); err != nil {
		return nil, err
	}
	hc := g.httpClient(p.ConnectTimeout)
	waits := model.Timeouts{FirstToken: p.FirstTokenTimeout, StreamIdle: p.StreamIdleTimeout}
	// A failure says what to change: the key's variable, the base URL.
	base, _ := endpointOf(p)
	where := model.Where{KeyEnv: p.APIKeyEnv, BaseURL: base, Model: p.Model}
	switch p.Provider {
	case config.ProviderOpenAI:
		return model.Advised(openai.New(openai.Options{BaseURL: p.BaseURL, APIKey: key, Model: p.Model, MaxOutputTokens: p.MaxOutputTokens,
			HTTPClient: hc, Timeouts: waits, ReasoningEffort: p.ReasoningEffort}), where), nil
	case config.ProviderOpenAIResponses:
		return model.Advised(responses.New(responses.Options{BaseURL: p.BaseURL, APIKey: key, Model: p.Model, MaxOutputTokens: p.MaxOutputTokens,
			HTTPClient: hc, Timeouts: waits, ReasoningEffort: p.ReasoningEffort}), where), nil
	case config.ProviderGemini:
		return model.Advised(gemini.New(gemini.Options{BaseURL: p.BaseURL, APIKey: key, Model: p.Model, MaxOutputTokens: p.MaxOutputTokens,
			HTTPClient: hc, Timeouts: waits, ReasoningEffort: p.ReasoningEffort}), where), nil
	case config.ProviderAnthropic:
		budget, err := anthropic.EffortBudget(p.ReasoningEffort)
		if err != nil {
			return nil, err
		}
		return model.Advised(anthropic.New(anthropic.Options{BaseURL: p.BaseURL, APIKey: key, Model: p.Model, MaxOutputTokens: p.MaxOutputTokens,
			HTTPClient: hc, Timeouts: waits, ThinkingBudget: budget}), where), nil
	case config.ProviderScript:
		s, err := script.Load(p.Script)
		if err != nil {
			return nil, err
		}
		return script.New(s), nil
	}
	return nil, fmt.Errorf("unknown provider %q", p.Provider)
}

// endpointOf is the base URL profile p sends to and where it came from:
// the variable that set it, the config file, or the provider's default.
func endpointOf(p config.Profile) (base, from string) {
	switch {
	case p.BaseURLEnv != "":
		return p.BaseURL, "$" + p.BaseURLEnv
	case p.BaseURL != "":
		return p.BaseURL, "config"
	case p.Provider == config.ProviderOpenAI:
		return openai.DefaultBaseURL, "default"
	case p.Provider == config.ProviderOpenAIResponses:
		return responses.DefaultBaseURL, "default"
	case p.Provider == config.ProviderGemini:
		return gemini.DefaultBaseURL, "default"
	case p.Provider == config.ProviderAnthropic:
		return anthropic.DefaultBaseURL, "default"
	}
	return "", ""
}

// checkKey refuses a profile that needs an API key whose variable is
// empty: a configuration problem, found before anything is written.
func (g *globals) checkKey(p config.Profile) error {
	if p.NeedsKey() && g.getenv(p.APIKeyEnv) == "" {
		return fmt.Errorf("profile %s: the API key variable %s is empty; export %s=... or name another variable in api_key_env", p.Name, p.APIKeyEnv, p.APIKeyEnv)
	}
	return nil
}

// cwd returns the directory sessions start in: the worktree -w made, or
// the working directory meka was started in.
func (g *globals) cwd() (string, error) {
	if g.workdir != "" {
		return g.workdir, nil
	}
	d, err := os.Getwd()
	if err != nil {
		return "", &exitError{code: 1, err: fmt.Errorf("working directory: %w", err)}
	}
	return d, nil
}
