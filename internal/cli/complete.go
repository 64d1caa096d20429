package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// Shell completion (meka completion bash|zsh|fish|powershell) completes
// session ids, profile names and permission levels. A completion reads
// what exists and never creates a data directory or database.

// completeSessionIDs offers the ids of every top-level session, newest
// first, each with its title.
func (g *globals) completeSessionIDs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return g.sessionIDs(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (g *globals) sessionIDs(cmd *cobra.Command, prefix string) []cobra.Completion {
	dir := g.dataDir
	if dir == "" {
		dir = config.DataDir(g.getenv)
	}
	if dir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "meka.db")); err != nil {
		return nil
	}
	db, err := g.openDB(cmd.Context(), nil)
	if err != nil {
		return nil
	}
	defer db.Close()
	page, err := db.Sessions().List(cmd.Context(), session.ListOptions{Limit: 200})
	if err != nil {
		return nil
	}
	var out []cobra.Completion
	for _, m := range page.Sessions {
		if strings.HasPrefix(m.ID, prefix) {
			out = append(out, cobra.CompletionWithDesc(m.ID, cell(m.Title, 50)))
		}
	}
	return out
}

// completeSessionFlag completes a flag whose value is a session id.
func (g *globals) completeSessionFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return g.sessionIDs(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeProfiles offers the configured profiles and the providers whose
// key is in the environment.
func (g *globals) completeProfiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if cfg, err := g.loadConfig(); err == nil {
		out = append(out, cfg.ProfileNames()...)
	}
	for _, p := range []config.Provider{config.ProviderOpenAI, config.ProviderAnthropic} {
		if g.getenv(config.DefaultKeyEnv(p)) != "" {
			out = append(out, string(p))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeProviders offers the configured profiles and the two providers
// whose profile the environment makes.
func (g *globals) completeProviders(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	if cfg, err := g.loadConfig(); err == nil {
		out = append(out, cfg.ProfileNames()...)
	}
	for _, p := range []string{string(config.ProviderOpenAI), string(config.ProviderAnthropic)} {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func completeLevels(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, l := range permission.Levels {
		out = append(out, l.String())
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// registerCompletions attaches the flag completions of the root command.
func (g *globals) registerCompletions(root *cobra.Command) {
	_ = root.RegisterFlagCompletionFunc("profile", g.completeProfiles)
	_ = root.RegisterFlagCompletionFunc("permission", completeLevels)
	_ = root.RegisterFlagCompletionFunc("provider", g.completeProviders)
	_ = root.RegisterFlagCompletionFunc("resume", g.completeSessionFlag)
}
