package config

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"meka.dev/meka/internal/sandbox/credential"
	"meka.dev/meka/permission"
)

// checkKeys reports the first key, in document order, that the schema does
// not have. It compares exact spellings, where go-toml's strict mode would
// let "Model" stand for "model".
func checkKeys(file string, idx *keyIndex) error {
	root := reflect.TypeFor[fileConfig]()
	for _, e := range idx.order {
		parent, _, at, unknown := walkSchema(root, e.path)
		if !unknown {
			continue
		}
		key := e.path[:at+1]
		pos := idx.locate(key)
		msg := "unknown key"
		if s := suggest(e.path[at], knownKeys(parent)); s != "" {
			msg = fmt.Sprintf("unknown key (did you mean %q?)", s)
		}
		return &Error{File: file, Line: pos.line, Column: pos.col, Key: formatKey(key), Msg: msg}
	}
	return nil
}

// converter turns the decoded file into a Config, collecting every
// semantic error with its position.
type converter struct {
	file string
	idx  *keyIndex
	errs []*Error
	// keyNames are the providers' key variables: the default ones first,
	// then the profiles' in order, which env_passthrough may not pass.
	keyNames []string
}

func (c *converter) fail(key []string, err error, format string, args ...any) {
	pos := c.idx.locate(key)
	c.add(key, pos, err, format, args...)
}

func (c *converter) failElem(key []string, i int, err error, format string, args ...any) {
	c.add(key, c.idx.locateElem(key, i), err, format, args...)
}

func (c *converter) add(key []string, pos position, err error, format string, args ...any) {
	c.errs = append(c.errs, &Error{
		File: c.file, Line: pos.line, Column: pos.col,
		Key: formatKey(key), Msg: fmt.Sprintf(format, args...), Err: err,
	})
}

// first returns the earliest error in the file, so the report does not
// depend on the order the checks run in.
func (c *converter) first() error {
	if len(c.errs) == 0 {
		return nil
	}
	sort.SliceStable(c.errs, func(i, j int) bool {
		a, b := c.errs[i], c.errs[j]
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	return c.errs[0]
}

func keyPath(parts ...string) []string { return parts }

func convert(file string, f *fileConfig, idx *keyIndex) (*Config, error) {
	c := &converter{file: file, idx: idx, keyNames: []string{DefaultKeyEnv(ProviderOpenAI), DefaultKeyEnv(ProviderAnthropic)}}
	cfg := Default()
	cfg.File = file
	for name, fp := range f.Profiles {
		if p, ok := c.profile(file, name, fp); ok {
			cfg.Profiles[name] = p
			if p.APIKeyEnv != "" {
				c.keyNames = append(c.keyNames, p.APIKeyEnv)
			}
		}
	}
	slices.Sort(c.keyNames[2:])
	for id, fm := range f.Models {
		if m, ok := c.model(id, fm); ok {
			cfg.Models[id] = m
		}
	}
	for name, fp := range f.Profiles {
		c.fallbacks(name, fp.Fallback, f.Profiles)
	}
	if f.DefaultProfile != nil {
		name := *f.DefaultProfile
		if _, ok := f.Profiles[name]; !ok {
			have := "no profiles are configured"
			if len(f.Profiles) > 0 {
				have = "have " + strings.Join(slices.Sorted(maps.Keys(f.Profiles)), ", ")
			}
			c.fail(keyPath("default_profile"), ErrUnknownProfile, "no profile %q (%s)", name, have)
		}
		cfg.DefaultProfile = name
	}
	c.permissions(&cfg.Permissions, &f.Permissions)
	c.tools(&cfg.Tools, &f.Tools)
	c.schedule(&cfg.Schedule, &f.Schedule)
	c.serve(&cfg.Serve, &f.Serve)
	c.store(&cfg.Store, &f.Store)
	c.instructions(&cfg.Instructions, &f.Instructions)
	c.mcp(&cfg.MCP, &f.MCP)
	c.agents(&cfg.Agents, &f.Agents)
	if e := f.Checkpoints.Enabled; e != nil {
		cfg.Checkpoints.Off = !*e
	}
	cfg.Checkpoints.MaxBytes = int64(c.positive(keyPath("checkpoints", "max_bytes"), f.Checkpoints.MaxBytes))
	cfg.Checkpoints.MaxFileBytes = int64(c.positive(keyPath("checkpoints", "max_file_bytes"), f.Checkpoints.MaxFileBytes))
	if t := f.Telemetry.OTLPEndpoint; t != nil {
		cfg.Telemetry.OTLPEndpoint = *t
		if err := checkURL(*t); err != "" {
			c.fail(keyPath("telemetry", "otlp_endpoint"), nil, "%s", err)
		}
	}
	cfg.Hooks = f.Hooks
	c.lsp(&cfg.LSP, &f.LSP)
	if f.Telemetry.LogContent != nil {
		cfg.Telemetry.LogContent = *f.Telemetry.LogContent
	}
	if err := c.first(); err != nil {
		return nil, err
	}
	cfg.Settings = settings(idx)
	return cfg, nil
}

func (c *converter) profile(file, name string, fp fileProfile) (Profile, bool) {
	key := func(k string) []string { return keyPath("profiles", name, k) }
	n := len(c.errs)
	if err := checkName(name); err != "" {
		c.fail(keyPath("profiles", name), nil, "profile name %s", err)
	}
	p := newProfile(name)
	if fp.Provider == nil {
		c.fail(keyPath("profiles", name), nil, "missing provider (want %s)", providerNames())
	} else {
		p.Provider = Provider(*fp.Provider)
		if !slices.Contains(Providers, p.Provider) {
			c.fail(key("provider"), nil, "unknown provider %q (want %s)", *fp.Provider, providerNames())
		}
	}
	setString(&p.Model, fp.Model)
	if p.Model == "" && fp.Model != nil {
		c.fail(key("model"), nil, "empty model")
	}
	if p.Model == "" {
		p.Model = DefaultModel(p.Provider)
	}
	if fp.BaseURL != nil {
		p.BaseURL = *fp.BaseURL
		if err := checkURL(p.BaseURL); err != "" {
			c.fail(key("base_url"), nil, "%s", err)
		}
	}
	if fp.APIKeyEnv != nil {
		p.APIKeyEnv = *fp.APIKeyEnv
		if !isEnvName(p.APIKeyEnv) {
			// Never echo the value: it may be the key itself.
			c.fail(key("api_key_env"), nil, "not an environment variable name; give the name of the variable that holds the key, not the key")
		}
	} else {
		p.APIKeyEnv = DefaultKeyEnv(p.Provider)
	}
	p.ContextWindow = c.positive(key("context_window"), fp.ContextWindow)
	p.MaxOutputTokens = c.positive(key("max_output_tokens"), fp.MaxOutputTokens)
	p.MaxRequestBytes = c.positive(key("max_request_bytes"), fp.MaxRequestBytes)
	if fp.Vision != nil {
		p.Vision = *fp.Vision
	}
	if fp.Script != nil {
		p.Script = *fp.Script
		if p.Script == "" {
			c.fail(key("script"), nil, "empty script path")
		} else if !filepath.IsAbs(p.Script) && file != "" {
			p.Script = filepath.Join(filepath.Dir(file), p.Script)
		}
	}
	if p.Provider == ProviderScript && fp.Script == nil {
		c.fail(keyPath("profiles", name), nil, "missing script (the script provider needs the path of a script file)")
	}
	if p.Provider != ProviderScript && fp.Script != nil && fp.Provider != nil {
		c.fail(key("script"), nil, "script is only for provider \"script\", not %q", p.Provider)
	}
	if fp.Plan != nil {
		p.Plan = c.plan(key("plan"), *fp.Plan)
	}
	setString(&p.ReasoningEffort, fp.ReasoningEffort)
	c.duration(&p.ConnectTimeout, key("connect_timeout"), fp.ConnectTimeout)
	c.duration(&p.FirstTokenTimeout, key("first_token_timeout"), fp.FirstTokenTimeout)
	c.duration(&p.StreamIdleTimeout, key("stream_idle_timeout"), fp.StreamIdleTimeout)
	p.Fallback = slices.Clone(fp.Fallback)
	return p, len(c.errs) == n
}

// fallbacks checks a profile's fallback list: other profiles of the
// file, each once.
func (c *converter) fallbacks(name string, list []string, profiles map[string]fileProfile) {
	key := keyPath("profiles", name, "fallback")
	for i, fb := range list {
		switch _, ok := profiles[fb]; {
		case fb == name:
			c.failElem(key, i, nil, "profile %s cannot fall back to itself", name)
		case !ok:
			c.failElem(key, i, ErrUnknownProfile, "no profile %q (have %s)", fb, strings.Join(slices.Sorted(maps.Keys(profiles)), ", "))
		case slices.Index(list, fb) != i:
			c.failElem(key, i, nil, "profile %q listed twice", fb)
		}
	}
}

func (c *converter) model(id string, fm fileModel) (Model, bool) {
	n := len(c.errs)
	if id == "" {
		c.fail(keyPath("models", id), nil, "empty model id")
	}
	price := func(k string, v *float64) *float64 {
		if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			c.fail(keyPath("models", id, k), nil, "%v is not a price (want dollars per million tokens, 0 or more)", *v)
		}
		return v
	}
	m := Model{CacheReadPrice: price("cache_read_price", fm.CacheReadPrice), CacheWritePrice: price("cache_write_price", fm.CacheWritePrice)}
	for k, v := range map[string]*float64{"input_price": fm.InputPrice, "output_price": fm.OutputPrice} {
		if v == nil {
			c.fail(keyPath("models", id), nil, "missing %s (a price sets both input_price and output_price)", k)
		}
	}
	if p := price("input_price", fm.InputPrice); p != nil {
		m.InputPrice = *p
	}
	if p := price("output_price", fm.OutputPrice); p != nil {
		m.OutputPrice = *p
	}
	return m, len(c.errs) == n
}

func (c *converter) permissions(p *Permissions, fp *filePermissions) {
	key := func(k string) []string { return keyPath("permissions", k) }
	if fp.Enabled != nil {
		p.Enabled = p.Enabled[:0:0]
		for i, name := range fp.Enabled {
			l, err := permission.ParseLevel(name)
			switch {
			case err != nil:
				c.failElem(key("enabled"), i, err, "%v", err)
			case slices.Contains(p.Enabled, l):
				c.failElem(key("enabled"), i, nil, "level %q listed twice", name)
			default:
				p.Enabled = append(p.Enabled, l)
			}
		}
		slices.Sort(p.Enabled)
		if len(fp.Enabled) == 0 {
			c.fail(key("enabled"), nil, "no levels enabled; list at least one")
		}
		if len(p.Enabled) < len(fp.Enabled) {
			// Whether the default is enabled waits until the list is right.
			p.Enabled = nil
		}
	}
	if fp.Default != nil {
		if l, ok := c.level(key("default"), *fp.Default); ok {
			p.Default = l
		}
	}
	if len(p.Enabled) > 0 && !p.IsEnabled(p.Default) {
		if fp.Default != nil {
			c.fail(key("default"), nil, "level %q is not among permissions.enabled", p.Default)
		} else {
			c.fail(key("enabled"), nil, "the default level %q is not enabled; enable it or set permissions.default", p.Default)
		}
	}
	if fp.Approvals != nil {
		p.Approvals = *fp.Approvals
	}
	if fp.Network != nil {
		p.Network = *fp.Network
	}
	for i, g := range fp.EnvPassthrough {
		if _, err := path.Match(g, ""); err != nil || g == "" || strings.Contains(g, "=") {
			c.failElem(key("env_passthrough"), i, err, "%q is not a variable name glob", g)
			continue
		}
		if name, ok := credential.GlobPasses(g, c.keyNames); ok {
			c.failElem(key("env_passthrough"), i, nil,
				"%q would pass %s, a credential meka keeps from commands (the profiles' key variables and names ending in %s): name the variables commands need, with a pattern that cannot match one",
				g, name, orList(credential.Suffixes))
			continue
		}
		p.EnvPassthrough = append(p.EnvPassthrough, g)
	}
}

func (c *converter) tools(t *Tools, ft *fileTools) {
	key := func(k string) []string { return keyPath("tools", k) }
	for i, pat := range ft.Deny {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			c.failElem(key("deny"), i, err, "bad pattern %q (want a tool name, or a pattern such as \"shell_*\")", pat)
		}
	}
	t.Deny = slices.Clone(ft.Deny)
	if ft.Plan != nil {
		if p := c.plan(key("plan"), *ft.Plan); p != "" {
			t.Plan = p
		}
	}
	if ft.PlanCheckCompletion != nil {
		t.PlanCheckCompletion = *ft.PlanCheckCompletion
	}
	if n := ft.MaxCompletionNudges; n != nil {
		if *n < 0 {
			c.fail(key("max_completion_nudges"), nil, "negative (want 0 for no ceiling, or a positive number)")
		} else {
			t.MaxCompletionNudges = clampInt(*n)
		}
	}
	t.ToolPermissions = c.levelMap(key("tool_permissions"), ft.ToolPermissions)
}

func (c *converter) schedule(s *Schedule, fs *fileSchedule) {
	key := func(k string) []string { return keyPath("schedule", k) }
	if fs.Enabled != nil {
		s.Enabled = *fs.Enabled
	}
	c.duration(&s.PollInterval, key("poll_interval"), fs.PollInterval)
	c.duration(&s.MissedGrace, key("missed_grace"), fs.MissedGrace)
	c.duration(&s.GateTimeout, key("gate_timeout"), fs.GateTimeout)
	c.duration(&s.ClaimLease, key("claim_lease"), fs.ClaimLease)
	if v := c.positive(key("max_jobs"), fs.MaxJobs); v > 0 {
		s.MaxJobs = v
	}
	if v := c.positive(key("max_consecutive_fires"), fs.MaxConsecutiveFires); v > 0 {
		s.MaxConsecutiveFires = v
	}
	if s.ClaimLease <= s.GateTimeout {
		// Point at whichever of the two the file set; the defaults agree.
		if fs.ClaimLease != nil {
			c.fail(key("claim_lease"), nil, "%s is not longer than gate_timeout (%s); a lease must outlast a gate probe and the turn after it",
				FormatDuration(s.ClaimLease), FormatDuration(s.GateTimeout))
		} else {
			c.fail(key("gate_timeout"), nil, "%s is not shorter than claim_lease (%s); raise claim_lease too",
				FormatDuration(s.GateTimeout), FormatDuration(s.ClaimLease))
		}
	}
	if fs.Timezone != nil {
		tz := *fs.Timezone
		// time.LoadLocation("") is UTC, which is not what an empty value
		// looks like it means.
		loc, err := time.LoadLocation(tz)
		switch {
		case tz == "":
			c.fail(key("timezone"), nil, "empty; leave the key out for the host's local zone")
		case err != nil:
			c.fail(key("timezone"), err, "unknown time zone %q (want an IANA name such as \"Europe/Berlin\" or \"UTC\")", tz)
		default:
			s.Timezone, s.Location = tz, loc
		}
	}
}

func (c *converter) serve(s *Serve, fs *fileServe) {
	key := func(k string) []string { return keyPath("serve", k) }
	if fs.Listen != nil {
		s.Listen = *fs.Listen
		if err := checkListen(s.Listen); err != "" {
			c.fail(key("listen"), nil, "%s", err)
		}
	}
	c.duration(&s.IdleTimeout, key("idle_timeout"), fs.IdleTimeout)
	c.duration(&s.IdleSweepInterval, key("idle_sweep_interval"), fs.IdleSweepInterval)
	c.duration(&s.FeedRetention, key("feed_retention"), fs.FeedRetention)
	c.duration(&s.StreamHeartbeat, key("stream_heartbeat"), fs.StreamHeartbeat)
	c.duration(&s.StreamWriteTimeout, key("stream_write_timeout"), fs.StreamWriteTimeout)
	if fs.RelayProviderErrors != nil {
		s.RelayProviderErrors = *fs.RelayProviderErrors
	}
	resolve := func(p *string) string {
		if p == nil {
			return ""
		}
		if *p == "" || filepath.IsAbs(*p) || c.file == "" {
			return *p
		}
		return filepath.Join(filepath.Dir(c.file), *p)
	}
	s.TLSCert, s.TLSKey = resolve(fs.TLSCert), resolve(fs.TLSKey)
	if (s.TLSCert == "") != (s.TLSKey == "") {
		k := "tls_key"
		if s.TLSCert == "" {
			k = "tls_cert"
		}
		c.fail(key(k), nil, "set both tls_cert and tls_key, or neither")
	}
	names := make([]string, 0, len(fs.Webhooks))
	for name := range fs.Webhooks {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fw := fs.Webhooks[name]
		wkey := func(k string) []string { return keyPath("serve", "webhooks", name, k) }
		w := Webhook{Name: name, Events: fw.Events}
		switch {
		case fw.URL == nil:
			c.fail(keyPath("serve", "webhooks", name), nil, "missing url")
		default:
			w.URL = *fw.URL
			if msg := checkWebhookURL(w.URL); msg != "" {
				c.fail(wkey("url"), nil, "%s", msg)
			}
		}
		switch {
		case fw.SecretFile == nil || *fw.SecretFile == "":
			c.fail(keyPath("serve", "webhooks", name), nil, "missing secret_file (a file holding whsec_ and a base64 secret, mode 0600)")
		default:
			w.SecretFile = *fw.SecretFile
			if !filepath.IsAbs(w.SecretFile) && c.file != "" {
				w.SecretFile = filepath.Join(filepath.Dir(c.file), w.SecretFile)
			}
		}
		if len(fw.Events) == 0 {
			c.fail(wkey("events"), nil, "no events: name the event types to send, such as [\"schedule.fired\", \"turn.completed\"], or [\"*\"]")
		}
		s.Webhooks = append(s.Webhooks, w)
	}
}

// checkWebhookURL accepts https, and http only to a loopback host.
func checkWebhookURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "not a URL such as \"https://hooks.example/meka\""
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		h := u.Hostname()
		if h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback() {
			return ""
		}
		return "plain http is only for a loopback receiver; use https"
	}
	return "the scheme must be https (or http to a loopback receiver)"
}

func (c *converter) store(s *Store, fs *fileStore) {
	if fs.URL == nil {
		return
	}
	if err := CheckStoreURL(*fs.URL); err != nil {
		c.fail(keyPath("store", "url"), nil, "%v", err)
		return
	}
	s.URL = *fs.URL
}

// CheckStoreURL accepts an empty URL (the SQLite default) or a
// postgres:// or postgresql:// URL.
func CheckStoreURL(u string) error {
	if u == "" || strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		return nil
	}
	return fmt.Errorf("want a postgres:// or postgresql:// URL")
}

func (c *converter) agents(a *Agents, fa *fileAgents) {
	if v := c.positive(keyPath("agents", "max_parallel"), fa.MaxParallel); v > 0 {
		a.MaxParallel = v
	}
	if fa.MaxDepth != nil {
		if *fa.MaxDepth < 0 {
			c.fail(keyPath("agents", "max_depth"), nil, "%d is negative: 0 offers no sub-agents", *fa.MaxDepth)
		} else {
			a.MaxDepth = clampInt(*fa.MaxDepth)
		}
	}
}

func (c *converter) instructions(in *Instructions, fi *fileInstructions) {
	key := func(k string) []string { return keyPath("instructions", k) }
	for i, name := range fi.FallbackFiles {
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			c.failElem(key("fallback_files"), i, nil, "%q is not a file name (no directories)", name)
			continue
		}
		in.FallbackFiles = append(in.FallbackFiles, name)
	}
	in.MaxBytes = c.positive(key("max_bytes"), fi.MaxBytes)
}

func (c *converter) mcp(m *MCP, fm *fileMCP) {
	if fm.DefaultPermission != nil {
		if l, ok := c.level(keyPath("mcp", "default_permission"), *fm.DefaultPermission); ok {
			m.DefaultPermission = l
		}
	}
	if fm.ToolSearch != nil {
		switch *fm.ToolSearch {
		case ToolSearchAuto, ToolSearchAlways, ToolSearchNever:
			m.ToolSearch = *fm.ToolSearch
		default:
			c.fail(keyPath("mcp", "tool_search"), nil, "%q is not \"auto\", \"always\" or \"never\"", *fm.ToolSearch)
		}
	}
	if n := c.positive(keyPath("mcp", "tool_search_budget"), fm.ToolSearchBudget); n > 0 {
		m.ToolSearchBudget = n
	}
	for name, fs := range fm.Servers {
		key := func(k string) []string { return keyPath("mcp", "servers", name, k) }
		table := keyPath("mcp", "servers", name)
		if err := checkName(name); err != "" {
			c.fail(table, nil, "server name %s", err)
		}
		s := MCPServer{
			Name:            name,
			Args:            slices.Clone(fs.Args),
			Env:             fs.Env,
			Headers:         fs.Headers,
			ToolPermissions: c.levelMap(key("tool_permissions"), fs.ToolPermissions),
			StartupTimeout:  DefaultMCPStartupTimeout,
			ToolTimeout:     DefaultMCPToolTimeout,
			EnabledTools:    slices.Clone(fs.EnabledTools),
			DisabledTools:   slices.Clone(fs.DisabledTools),
		}
		if fs.Enabled != nil {
			s.Disabled = !*fs.Enabled
		}
		if fs.Required != nil {
			s.Required = *fs.Required
		}
		c.duration(&s.StartupTimeout, key("startup_timeout"), fs.StartupTimeout)
		c.duration(&s.ToolTimeout, key("tool_timeout"), fs.ToolTimeout)
		if s.StartupTimeout <= 0 {
			c.fail(key("startup_timeout"), nil, "a startup timeout must be longer than zero")
		}
		if s.ToolTimeout <= 0 {
			c.fail(key("tool_timeout"), nil, "a tool timeout must be longer than zero")
		}
		if s.Disabled && s.Required {
			c.fail(key("required"), nil, "a server cannot be both required and disabled (enabled = false)")
		}
		setString(&s.Command, fs.Command)
		setString(&s.URL, fs.URL)
		switch {
		case fs.Command != nil && fs.URL != nil:
			c.fail(key("url"), nil, "a server has a command or a url, not both")
		case fs.Command == nil && fs.URL == nil:
			c.fail(table, nil, "missing command or url (a stdio server has a command, an HTTP server a url)")
		case fs.Command != nil && s.Command == "":
			c.fail(key("command"), nil, "empty command")
		case fs.URL != nil:
			if err := checkURL(s.URL); err != "" {
				c.fail(key("url"), nil, "%s", err)
			}
		}
		if fs.Env != nil && fs.Command == nil && fs.URL != nil {
			c.fail(key("env"), nil, "env is only for a server started by command")
		}
		if fs.Headers != nil && fs.URL == nil && fs.Command != nil {
			c.fail(key("headers"), nil, "headers are only for a server reached by url")
		}
		if fs.Permission != nil {
			if l, ok := c.level(key("permission"), *fs.Permission); ok {
				s.Permission = &l
			}
		}
		m.Servers[name] = s
	}
}

func (c *converter) level(key []string, name string) (permission.Level, bool) {
	l, err := permission.ParseLevel(name)
	if err != nil {
		c.fail(key, err, "%v", err)
		return 0, false
	}
	return l, true
}

func (c *converter) levelMap(key []string, m map[string]string) map[string]permission.Level {
	out := make(map[string]permission.Level, len(m))
	for tool, name := range m {
		if l, ok := c.level(append(slices.Clone(key), tool), name); ok {
			out[tool] = l
		}
	}
	return out
}

func (c *converter) plan(key []string, name string) Plan {
	p := Plan(name)
	if !slices.Contains(Plans, p) {
		c.fail(key, nil, "unknown plan %q (want checklist, update_plan or write_todos)", name)
		return ""
	}
	return p
}

func (c *converter) duration(dst *time.Duration, key []string, s *string) {
	if s == nil {
		return
	}
	d, err := ParseDuration(*s)
	if err != nil {
		c.fail(key, err, "%v", err)
		return
	}
	*dst = d
}

func (c *converter) lsp(l *LSP, f *fileLSP) {
	if f.Enabled != nil {
		l.Off = !*f.Enabled
	}
	c.duration(&l.Wait, keyPath("lsp", "wait"), f.Wait)
	c.duration(&l.IdleTimeout, keyPath("lsp", "idle_timeout"), f.IdleTimeout)
	for _, name := range slices.Sorted(maps.Keys(f.Servers)) {
		fs := f.Servers[name]
		if !slices.Contains(LSPLanguages, name) {
			c.fail(keyPath("lsp", "servers", name), nil, "no language %q (have %s)", name, strings.Join(LSPLanguages, ", "))
			continue
		}
		if fs.Enabled != nil && !*fs.Enabled {
			l.Servers[name] = []string{}
			continue
		}
		if fs.Command == nil {
			continue
		}
		if len(fs.Command) == 0 || fs.Command[0] == "" {
			c.fail(keyPath("lsp", "servers", name, "command"), nil, "names no program; set enabled = false to turn the language off")
			continue
		}
		l.Servers[name] = slices.Clone(fs.Command)
	}
}

// positive returns *v, which must be above zero when set; 0 when unset.
func (c *converter) positive(key []string, v *int64) int {
	if v == nil {
		return 0
	}
	if *v <= 0 {
		c.fail(key, nil, "%d is not a positive number", *v)
		return 0
	}
	return clampInt(*v)
}

// clampInt converts v, saturating where int is 32 bits.
func clampInt(v int64) int {
	return int(max(min(v, math.MaxInt), math.MinInt))
}

func setString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// checkName vets a profile or server name, which people type on command
// lines and read in pickers.
func checkName(name string) string {
	if name == "" {
		return "is empty"
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Sprintf("%q has a blank or unprintable character", name)
		}
	}
	return ""
}

func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http or https URL", s)
	}
	return ""
}

func checkListen(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("%q is not a host:port address, such as \"127.0.0.1:7878\"", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Sprintf("%q has no valid port (want 0 to 65535)", s)
	}
	return ""
}

// isEnvName reports whether s is a portable environment variable name.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// orList joins words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
