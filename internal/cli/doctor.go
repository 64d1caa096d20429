package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/doctor"
	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func init() { extraCommands = append(extraCommands, newDoctorCmd) }

// endpointTimeout bounds doctor's one request to the profile's endpoint.
const endpointTimeout = 30 * time.Second

// versionTimeout bounds doctor's asking a language server its version.
const versionTimeout = 5 * time.Second

func newDoctorCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "check the config, the model endpoint, confinement, the database, MCP and language servers",
		Long: `meka doctor checks what meka needs, in order: the config file, the profile
and its API key; the profile's endpoint (one request of one output token:
reachable, key accepted, model known); which confinement backend runs
commands at read and workspace, and why the others do not; the data
directory and the database; each MCP server (started, its tools listed);
each language server meka would start (found on PATH, with its version,
or not).

It prints one table and a verdict. Exit status 0 when every check passes,
1 when one fails, each failure with what to do.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			failed := doctor.Run(cmd.Context(), g.stdout, g.doctorChecks()...)
			if len(failed) > 0 {
				return &exitError{code: 1}
			}
			return nil
		},
	}
}

// doctorChecks gathers what only the composition root reads (the config,
// the environment) and hands it to package doctor's checks.
func (g *globals) doctorChecks() []doctor.Check {
	c := doctor.Config{File: g.configFile}
	if c.File == "" {
		c.File = config.ConfigPath(g.getenv)
	}
	_, statErr := os.Stat(c.File)
	c.Found = statErr == nil
	var (
		cfg  *config.Config
		prov model.Provider
		w    model.Where
	)
	cfg, err := g.loadConfig()
	if err == nil {
		var p config.Profile
		p, err = cfg.ResolveProfile(g.profile, g.getenv)
		if errors.Is(err, config.ErrNoProfile) {
			err = fmt.Errorf("%w: %s", err, strings.SplitN(config.NoProfileHelp(), "\n", 2)[0])
		}
		if err == nil {
			base, from := endpointOf(p)
			c.Profile, c.Provider, c.Model, c.BaseURL, c.BaseURLFrom = p.Name, string(p.Provider), p.Model, base, from
			c.KeyEnv, c.KeyNeeded, c.KeySet = p.APIKeyEnv, p.NeedsKey(), p.APIKeyEnv != "" && g.getenv(p.APIKeyEnv) != ""
			w = model.Where{KeyEnv: p.APIKeyEnv, BaseURL: base, Model: p.Model}
			if !c.KeyNeeded || c.KeySet {
				prov, _ = g.provider(p)
			}
		}
	}
	c.Err = err
	checks := []doctor.Check{doctor.ConfigCheck(c), doctor.EndpointCheck(prov, w, endpointTimeout)}
	if cfg == nil {
		cfg = config.Default()
	}
	checks = append(checks, doctor.SandboxCheck(cfg.Permissions.Network))
	dir := g.dataDir
	if dir == "" {
		dir = config.DataDir(g.getenv)
	}
	checks = append(checks, doctor.DataCheck(dir, func(ctx context.Context) (string, error) {
		db, err := g.openDB(ctx, cfg)
		if err != nil {
			return "", err
		}
		defer db.Close()
		where := "SQLite " + filepath.Join(dir, "meka.db")
		if u, _ := g.storeURL(cfg); u != "" {
			where = "PostgreSQL"
		}
		page, err := db.Sessions().List(ctx, session.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		if len(page.Sessions) == 0 {
			return where + ": opened, no sessions yet", nil
		}
		return where + ": opened, sessions readable", nil
	}))
	checks = append(checks, doctor.MCPCheck(g.newMCP(cfg, g.logger(), &mcpNotices{})))
	var servers []lsp.Server
	if m := newLSP(cfg, nil, "", g.logger()); m != nil {
		servers = m.Servers() // it starts nothing, so there is nothing to close
	}
	return append(checks, doctor.LSPCheck(servers, versionTimeout))
}
