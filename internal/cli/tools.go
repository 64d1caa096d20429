package cli

import (
	"meka.dev/meka/agent"
	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/tool"
)

// builtinTools builds the file and shell tools of a session.
func builtinTools(cfg *config.Config, getenv func(string) string) func(env host.Env) ([]tool.Tool, error) {
	return func(env host.Env) ([]tool.Tool, error) {
		return nil, nil
	}
}

// extensions returns the plugins every session gets: the plan dialect the
// config selects.
func extensions(cfg *config.Config) []host.ExtensionFunc {
	return nil
}

// renderPlan draws a plan change for one-shot mode's stderr.
func renderPlan(ev agent.Event) (string, bool) { return "", false }
