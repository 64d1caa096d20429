package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/lsp"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/tools/shelltool"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/plan/todo"
	"meka.dev/meka/plan/writetodos"
	"meka.dev/meka/tool"
)

// builtinTools builds the file and shell tools of a session. protected
// are meka's own config and data paths, read-only to both even inside a
// writable root; masked (its config and data directories) are hidden
// from confined commands and file tools (in the workspace too) but for
// shared, read-only: the session's scratchpad and task output are added.
// dataDir's journal notes the temporary files of atomic writes. servers,
// when not nil, give file_write and file_edit their diagnostics.
func builtinTools(cfg *config.Config, protected, masked, shared []string, dataDir string, servers *lsp.Manager) func(env host.Env) ([]tool.Tool, error) {
	var diags fstool.Diagnoser
	if servers != nil {
		diags = diagnoser{servers}
	}
	scrub := keyVariables(cfg)
	return func(env host.Env) ([]tool.Tool, error) {
		roots, err := sandbox.NewRoots(env.Meta.Cwd, env.Meta.AdditionalDirs, env.ReadableDirs)
		if err != nil {
			return nil, err
		}
		roots = roots.Protect(protected...)
		running := ""
		if env.DataDir != "" {
			// Whoever held the session before and died left these running.
			running = filepath.Join(env.DataDir, "running")
			_, _ = sandbox.KillRecorded(running)
		}
		if dataDir != "" {
			roots = roots.Journal(filepath.Join(dataDir, "journal"))
		}
		scratch := ""
		visible := shared
		if env.DataDir != "" {
			scratch = filepath.Join(env.DataDir, "scratch")
			visible = append(slices.Clip(shared), scratch, filepath.Join(env.DataDir, "tasks"))
		}
		roots = roots.Hide(masked, visible)
		vision := env.Profile.Vision
		tools := fstool.New(fstool.Options{
			Roots:       roots,
			FS:          env.Files,
			Vision:      func() bool { return vision },
			ScratchDir:  scratch,
			Diagnostics: diags,
		})
		noTasks := ""
		if env.Depth > 0 {
			noTasks = "a sub-agent has no background tasks, since nothing would take their reports once it has answered"
		}
		shell := shelltool.New(shelltool.Options{
			Roots:      func() *sandbox.Roots { return roots },
			Tasks:      env.TaskRegistry,
			NoTasks:    noTasks,
			ScratchDir: scratch,
			Env:        os.Environ(),
			ScrubNames: scrub,

			EnvPassthrough: cfg.Permissions.EnvPassthrough,
			Network:        cfg.Permissions.Network,
			Protected:      protected,
			Masked:         masked,
			Visible:        visible,
			RunningDir:     running,
		})
		return append(tools, shell), nil
	}
}

// mekaState lists what confined commands and file tools may not write:
// the config directory, the config file in use and the data directory.
func (g *globals) mekaState(dataDir string) []string {
	var out []string
	if p := config.DefaultPath(g.getenv); p != "" {
		out = append(out, filepath.Dir(p))
	}
	if p := g.configFile; p != "" {
		out = append(out, p)
	} else if p := config.ConfigPath(g.getenv); p != "" {
		out = append(out, p)
	}
	if dataDir != "" {
		out = append(out, dataDir)
	}
	return out
}

// mekaHidden lists what confined commands may not read either: the config
// directory and the data directory (its database, serve token, logs and
// every session's files); and what of them every session's commands still
// read: the skill directories, whose scripts skills run.
func (g *globals) mekaHidden(dataDir string) (masked, shared []string) {
	if p := config.DefaultPath(g.getenv); p != "" {
		masked = append(masked, filepath.Dir(p))
		shared = append(shared, filepath.Join(filepath.Dir(p), "skills"))
	}
	if dataDir != "" {
		masked = append(masked, dataDir)
		shared = append(shared, filepath.Join(dataDir, "skills"))
	}
	return masked, shared
}

// keyVariables lists every provider key variable a profile names, so the
// shell scrubs them from commands' environments.
func keyVariables(cfg *config.Config) []string {
	seen := map[string]bool{"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true}
	for _, p := range cfg.Profiles {
		if p.APIKeyEnv != "" {
			seen[p.APIKeyEnv] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// extensions returns the plugins every session gets: the plan dialect its
// profile or [tools] plan selects. Exactly one dialect's tools are offered.
func extensions(cfg *config.Config) []host.ExtensionFunc {
	return []host.ExtensionFunc{func(env host.Env) (host.Extension, error) {
		prof := cfg.Profiles[env.Profile.Name] // zero for a zero-config profile
		check, nudges := cfg.Tools.PlanCheckCompletion, cfg.Tools.MaxCompletionNudges
		switch cfg.PlanFor(prof) {
		case config.PlanUpdatePlan:
			// A fork starts with a fresh plan: the calls it copied are ignored.
			c, err := todo.Plugin{Store: todo.NewStore(), CheckCompletion: check, MaxCompletionNudges: nudges,
				FromTurn: env.Meta.ForkedAt + 1}.Compose()
			return c, err
		case config.PlanWriteTodos:
			return writetodos.New(writetodos.Options{CheckCompletion: check, MaxCompletionNudges: nudges}).Compose(), nil
		}
		return checklistExtension(env), nil
	}}
}

// checklistNotice says at startup that [tools] deny has turned the
// checklist off, which denying any one of its tools does.
func checklistNotice(w io.Writer, t config.Tools) {
	if d := checklist.DeniedTools(t.Denied); len(d) > 0 {
		fmt.Fprintf(w, "meka: [tools] deny removes %s, so the checklist is off: none of its tools is offered and no turn is held for open items\n",
			strings.Join(d, ", "))
	}
}

// checklistExtension is the checklist plugin of a session.
func checklistExtension(env host.Env) host.Extension {
	return checklist.New(checklist.Options{Tasks: env.Tasks, Denied: env.Denied}).Compose()
}

// renderPlan draws a plan change for one-shot mode's stderr: one row per
// item on the list.
func renderPlan(ev agent.Event) (string, bool) {
	c, ok := ev.(plan.Changed)
	if !ok {
		return "", false
	}
	if len(c.Items) == 0 {
		return "meka: plan: empty\n", true
	}
	return "meka: plan:\n" + plan.Lines(c.Items), true
}

// checkWorkspaceHome refuses the workspace level in / or the home
// directory unless --workspace-home says the user means it: there the
// workspace is everything, shell startup files and ssh keys included.
func (g *globals) checkWorkspaceHome(level permission.Level) error {
	if level != permission.Workspace || g.workspaceHome || g.clientDirs {
		return nil
	}
	dir, err := g.cwd()
	if err != nil {
		return err
	}
	c, err := sandbox.Canonical(dir)
	if err != nil {
		return nil // the session's own check reports a bad directory
	}
	what := host.WideWorkspace(c, g.getenv("HOME"))
	if what == "" {
		return nil
	}
	return usageError("meka is started in %s (%s) at the workspace level, where commands and file tools could change every file below it: your shell startup files, ssh keys and other projects included. Start meka in a project directory, choose --permission read, or pass --workspace-home if you mean it.", what, c)
}
