package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

func init() { extraCommands = append(extraCommands, newTrustCmd) }

// hooksExtension runs the person's hooks: ~/.claude/settings.json and,
// once the workspace is trusted, its .claude and .meka settings files,
// read once as the session opens.
// hookLists keeps what each session's hooks were when it opened, for
// /hooks.
type hookLists struct{ m sync.Map }

func (l *hookLists) get(id string) []host.HookInfo {
	v, _ := l.m.Load(id)
	hs, _ := v.([]host.HookInfo)
	return hs
}

func hookInfos(hs []hooks.Hook, active bool, why string) []host.HookInfo {
	out := make([]host.HookInfo, 0, len(hs))
	for _, h := range hs {
		out = append(out, host.HookInfo{Event: h.Event, Matcher: h.Matcher, Command: h.Command, Source: h.Source,
			Timeout: int(h.Timeout.Seconds()), Confined: h.Confine, Active: active, Why: why})
	}
	return out
}

func (g *globals) hooksExtension(cfg *config.Config, dataDir string, protected, masked, shared []string, lists *hookLists) (host.ExtensionFunc, error) {
	var own hooks.Settings
	if len(cfg.Hooks) > 0 {
		s, err := hooks.FromConfig(cfg.File, cfg.Hooks)
		if ke, ok := errors.AsType[*hooks.KeyError](err); ok {
			key := []string{"hooks", ke.Event}
			line, col := config.Locate(cfg.File, key, ke.Entry)
			return nil, &config.Error{File: cfg.File, Line: line, Column: col, Key: "hooks." + ke.Key(), Msg: ke.Msg, Err: err}
		} else if err != nil {
			return nil, err
		}
		own = s
	}
	home := g.getenv("HOME")
	trust := hooks.Trust{Path: filepath.Join(dataDir, hooks.TrustFile)}
	env := sandbox.ConfinedEnv(os.Environ(), cfg.Permissions.EnvPassthrough)
	return func(e host.Env) (host.Extension, error) {
		ws := e.Meta.Cwd
		set, err := hooks.Discover(hooks.Sources{Config: own, ConfigFile: cfg.File, Home: home, Workspace: ws})
		var pending []session.Entry
		var inactive []host.HookInfo
		if err != nil {
			pending = append(pending, session.Notice{Severity: session.SeverityWarning,
				Title: "Hooks: a settings file could not be read, its hooks do not run", Description: err.Error()})
		}
		if files := set.Files(); len(files) > 0 {
			ok, why, terr := false, "meka has no data directory to keep trusted workspaces in", error(nil)
			if dataDir != "" {
				ok, why, terr = trust.Trusted(ws, files, os.Getuid())
			}
			if terr != nil {
				why = terr.Error()
			}
			if !ok {
				dropped := set.Untrust()
				pending = append(pending, untrustedNotice(why, dropped))
				inactive = hookInfos(dropped, false, why)
			}
		}
		lists.m.Store(e.SessionID, append(hookInfos(set.All(), true, ""), inactive...))
		if len(set.All()) == 0 && len(pending) == 0 {
			return host.Extension{}, nil
		}
		level := e.Level
		h := hooks.New(hooks.Options{
			Set: set, SessionID: e.SessionID, Cwd: ws, Subagent: e.Depth > 0, Model: e.Profile.Model,
			MaxNudges: cfg.Tools.MaxCompletionNudges, Pending: pending,
			PermissionMode: func() string { return claudeMode(level()) },
			Runner: &hooks.Runner{Env: env, ProjectDir: ws, Now: g.now,
				Confinement: func() sandbox.Spec {
					spec := sandbox.Spec{Mode: sandbox.ReadOnly, Network: cfg.Permissions.Network,
						Protected: protected, Masked: masked, Visible: shared}
					switch level() {
					case permission.Workspace:
						spec.Mode = sandbox.Workspace
						spec.Writable = append([]string{ws}, e.Meta.AdditionalDirs...)
					case permission.Unrestricted:
						spec.Mode = sandbox.Unrestricted
					}
					return spec
				}},
		})
		return h.Extension(), nil
	}, nil
}

// untrustedNotice lists the hooks an untrusted workspace would run.
func untrustedNotice(why string, dropped []hooks.Hook) session.Notice {
	var b strings.Builder
	for _, h := range dropped {
		fmt.Fprintf(&b, "%s %s: %s (%s)\n", h.Event, h.Matcher, h.Command, h.Source)
	}
	return session.Notice{Severity: session.SeverityWarning,
		Title:       fmt.Sprintf("Hooks: %d hook(s) of this workspace do not run: %s", len(dropped), why),
		Description: strings.TrimSuffix(b.String(), "\n")}
}

// claudeMode names a level as Claude Code's permission_mode does.
func claudeMode(l permission.Level) string {
	switch l {
	case permission.Unrestricted:
		return "bypassPermissions"
	case permission.Workspace:
		return "acceptEdits"
	}
	return "plan"
}

func newTrustCmd(g *globals) *cobra.Command {
	var list, revoke bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "let a workspace's hooks (.claude/settings.json, .meka/settings.json) run; --list, --revoke",
		Long: "A workspace's hooks are commands its settings files ask meka to run; they run only once\n" +
			"the workspace is trusted, and only while the person owns those files. The list is kept in\n" +
			"meka's data directory.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dataDir, err := g.dataDirectory()
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			tr := hooks.Trust{Path: filepath.Join(dataDir, hooks.TrustFile)}
			if list {
				dirs, err := tr.List()
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				for _, d := range dirs {
					fmt.Fprintln(g.stdout, d)
				}
				return nil
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if revoke {
				was, err := tr.Revoke(dir)
				if err != nil {
					return &exitError{code: 1, err: err}
				}
				if !was {
					return &exitError{code: 1, err: fmt.Errorf("%s was not trusted", dir)}
				}
				fmt.Fprintf(g.stdout, "no longer trusted: %s\n", dir)
				return nil
			}
			d, err := tr.Add(dir)
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			fmt.Fprintf(g.stdout, "trusted: %s (its hooks run from the next session on)\n", d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted workspaces")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "stop trusting DIR")
	return cmd
}
