package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/model"
)

// Config is what the composition root found reading the config file and
// resolving the profile.
type Config struct {
	// File is the config file read, or the default path when none exists;
	// Found says whether it exists.
	File  string
	Found bool
	// Err is the config's or the profile's error; the rest is then unset.
	Err     error
	Profile string
	// Provider, Model, BaseURL and BaseURLFrom describe the profile's
	// endpoint (BaseURLFrom: config, $VARIABLE or default).
	Provider, Model, BaseURL, BaseURLFrom string
	// KeyEnv is the variable holding the key; KeyNeeded whether the
	// profile cannot work without one; KeySet whether it is set.
	KeyEnv            string
	KeyNeeded, KeySet bool
}

// ConfigCheck reports the config file, the profile and its key.
func ConfigCheck(c Config) Check {
	return func(context.Context) []Result {
		file := Result{Check: "config", Status: Pass, Detail: c.File}
		if !c.Found {
			file.Detail = "no config file (" + c.File + "): the profile comes from the environment"
		}
		if c.Err != nil {
			return []Result{{Check: "config", Status: Fail, Detail: c.Err.Error(),
				Fix: "fix the config (docs/config.md lists every key), or export OPENAI_API_KEY or ANTHROPIC_API_KEY to run without one"}}
		}
		prof := Result{Check: "profile", Status: Pass,
			Detail: fmt.Sprintf("%s: %s, model %s, %s (%s)", c.Profile, c.Provider, c.Model, c.BaseURL, c.BaseURLFrom)}
		key := Result{Check: "api key", Status: Pass, Detail: "$" + c.KeyEnv + " is set"}
		switch {
		case c.KeyEnv == "":
			key = Result{Check: "api key", Status: Skip, Detail: "the profile reads no key"}
		case !c.KeySet && c.KeyNeeded:
			key = Result{Check: "api key", Status: Fail, Detail: "$" + c.KeyEnv + " is empty",
				Fix: fmt.Sprintf("export %s=... (or name another variable in profiles.%s.api_key_env)", c.KeyEnv, c.Profile)}
		case !c.KeySet:
			key = Result{Check: "api key", Status: Pass, Detail: "$" + c.KeyEnv + " is empty; a local server may need none"}
		}
		return []Result{file, prof, key}
	}
}

// EndpointCheck sends the profile's endpoint one request of one output
// token: it answers (reachable), with no 401 or 403 (the key is
// accepted), and not with a 404 or 400 naming the model (it is known).
// timeout bounds the request.
func EndpointCheck(p model.Provider, w model.Where, timeout time.Duration) Check {
	return func(ctx context.Context) []Result {
		if p == nil {
			return []Result{{Check: "endpoint", Status: Skip, Detail: "no profile to reach"}}
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		req := &model.Request{
			Messages:        []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "Reply with the word ok."}}}},
			MaxOutputTokens: 1,
		}
		_, err := model.Collect(p.Stream(ctx, req), nil)
		if err == nil {
			return []Result{{Check: "endpoint", Status: Pass, Detail: fmt.Sprintf("%s answered; key accepted, model %s known", w.BaseURL, w.Model)}}
		}
		var me *model.Error
		switch {
		case errors.As(err, &me):
			fix := me.Hint
			if fix == "" {
				fix = model.Advice(me, w)
			}
			if fix == "" {
				fix = "see the provider's answer above; meka -v shows more"
			}
			detail := me.Display()
			if me.Hint != "" {
				detail = strings.TrimSuffix(detail, "; "+me.Hint)
			}
			return []Result{{Check: "endpoint", Status: Fail, Detail: detail, Fix: fix}}
		case ctx.Err() != nil:
			return []Result{{Check: "endpoint", Status: Fail, Detail: fmt.Sprintf("%s did not answer within %s", w.BaseURL, timeout),
				Fix: "check that the server is up and base_url is right"}}
		}
		return []Result{{Check: "endpoint", Status: Fail, Detail: err.Error(), Fix: "check base_url and the network"}}
	}
}

// SandboxCheck reports which backend confines commands at read and
// workspace, and why each other one does not. Without one, those levels
// cannot run shell commands: a warning, since meka still works.
func SandboxCheck(network bool) Check {
	return func(context.Context) []Result {
		var rows []Result
		chosen := ""
		for _, g := range sandbox.Check() {
			if g.Holds(network) && chosen == "" {
				chosen = g.Backend
				rows = append(rows, Result{Check: "sandbox", Status: Pass, Detail: g.Backend + ": used; every guarantee holds"})
				continue
			}
			why := "every guarantee holds, but " + chosen + " comes first"
			if !g.Holds(network) {
				why = "not used: " + strings.Join(g.Missing, "; ")
			}
			rows = append(rows, Result{Check: "sandbox", Status: Pass, Detail: g.Backend + ": " + why})
		}
		if chosen == "" {
			for i := range rows {
				rows[i].Status = Warn
			}
			rows = append(rows, Result{Check: "sandbox", Status: Warn, Detail: "no backend confines commands here: read and workspace run no shell commands",
				Fix: "install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock ABI 4 or newer; or allow unrestricted"})
		}
		return rows
	}
}

// DataCheck reports the data directory (it exists or can be made, and
// meka can write in it) and the database (open describes it, or fails).
func DataCheck(dir string, open func(ctx context.Context) (string, error)) Check {
	return func(ctx context.Context) []Result {
		d := Result{Check: "data dir", Status: Pass, Detail: dir}
		switch err := writable(dir); {
		case dir == "":
			d = Result{Check: "data dir", Status: Fail, Detail: "no data directory", Fix: "set $MEKA_DATA_DIR or $HOME, or pass --data-dir"}
		case err != nil:
			d = Result{Check: "data dir", Status: Fail, Detail: err.Error(), Fix: "make " + dir + " writable by you, or point $MEKA_DATA_DIR elsewhere"}
		}
		what, err := open(ctx)
		db := Result{Check: "database", Status: Pass, Detail: what}
		if err != nil {
			db = Result{Check: "database", Status: Fail, Detail: err.Error(),
				Fix: "check [store] url or $MEKA_DATABASE_URL; for the SQLite file, that no other program holds it and the disk has room"}
		}
		return []Result{d, db}
	}
}

// writable makes dir if needed and writes and removes a file in it.
func writable(dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(filepath.Clean(name))
}

// MCPCheck starts the configured servers, waits for each (bounded by its
// startup_timeout), and reports their state and tools. m may be nil.
func MCPCheck(m *mcp.Manager) Check {
	return func(ctx context.Context) []Result {
		if !m.Configured() {
			return []Result{{Check: "mcp", Status: Skip, Detail: "no MCP servers configured"}}
		}
		m.Start(ctx)
		defer m.Close()
		_ = m.Wait(ctx) // each server's own result is below
		var rows []Result
		for _, s := range m.Status() {
			r := Result{Check: "mcp " + s.Name, Status: Pass, Detail: fmt.Sprintf("connected: %d tools, %d prompts", s.Tools, s.Prompts)}
			if names := m.ToolNames(s.Name); len(names) > 0 {
				const shown = 8
				list := strings.Join(names[:min(len(names), shown)], ", ")
				if len(names) > shown {
					list += fmt.Sprintf(", … %d more", len(names)-shown)
				}
				r.Detail += " (" + list + ")"
			}
			switch s.State {
			case mcp.StateConnected:
			case mcp.StateDisabled:
				r = Result{Check: r.Check, Status: Skip, Detail: "disabled in the config"}
			default:
				why := "did not connect"
				if s.Err != nil {
					why = s.Err.Error()
				}
				if s.Stderr != "" {
					why += "; its stderr: " + lastLine(s.Stderr)
				}
				r = Result{Check: r.Check, Status: Warn, Detail: why,
					Fix: "check mcp.servers." + s.Name + " (command or url); meka runs without it"}
				if s.Required {
					r.Status = Fail
					r.Fix = "mcp.servers." + s.Name + " is required: fix its command or url, or set required = false"
				}
			}
			rows = append(rows, r)
		}
		return rows
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// LSPCheck lists the language servers meka would start (servers; nil when
// [lsp] turns them off): each found with its version, asked with a
// timeout, or not found. A default server not on PATH is no problem
// (that language gets no diagnostics); a configured one not found, or
// one that fails asked its version (a rustup proxy with no such
// component), is a warning.
func LSPCheck(servers []lsp.Server, timeout time.Duration) Check {
	return func(ctx context.Context) []Result {
		if servers == nil {
			return []Result{{Check: "lsp", Status: Skip, Detail: "language servers are off ([lsp] enabled = false)"}}
		}
		var rows []Result
		for _, s := range servers {
			r := Result{Check: "lsp"}
			switch {
			case len(s.Command) == 0:
				r.Status, r.Detail = Skip, "off in the config"
			case s.Err == nil:
				r.Status, r.Detail = Pass, s.Path
				if s.Version == nil {
					break
				}
				v, err := serverVersion(ctx, s, timeout)
				if err != nil {
					r.Status, r.Detail = Warn, r.Detail+": asked its version, "+err.Error()
					r.Fix = "it may not start either: repair it, or set lsp.servers." + s.Language + ".enabled = false"
					break
				}
				r.Detail += ", " + v
			case s.Configured:
				r.Status, r.Detail = Warn, s.Err.Error()
				r.Fix = "check lsp.servers." + s.Language + ".command; meka runs without it"
			default:
				r.Status, r.Detail = Skip, s.Err.Error()+"; no diagnostics for its files"
			}
			r.Detail = s.Language + ": " + r.Detail
			rows = append(rows, r)
		}
		return rows
	}
}

// serverVersion is the first line s prints asked for its version.
func serverVersion(ctx context.Context, s lsp.Server, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Path, s.Version...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = time.Second // a child holding a pipe open does not hold doctor
	out, err := cmd.Output()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("no answer within %s", timeout)
	case err != nil:
		if said := firstLine(stderr.String()); said != "" {
			return "", fmt.Errorf("%w: %s", err, said)
		}
		return "", err
	}
	if v := firstLine(string(out)); v != "" {
		return v, nil
	}
	return "", errors.New("it printed nothing")
}

// firstLine is s's first line, cut to a table cell's width.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	const most = 100
	if len(line) > most {
		line = line[:most] + "…"
	}
	return line
}
