package cli

import (
	"path/filepath"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/subagent"
)

// agentsExtension gives a session the agent_* tools while it is less than
// [agents] max_depth sub-agents deep, with the definitions visible from
// its directory listed.
func agentsExtension(cfg *config.Config, src subagent.Sources) host.ExtensionFunc {
	return func(env host.Env) (host.Extension, error) {
		if env.Depth >= cfg.Agents.MaxDepth || env.Session == nil {
			return host.Extension{}, nil
		}
		scratch := ""
		if env.DataDir != "" {
			scratch = filepath.Join(env.DataDir, "scratch")
		}
		return host.Extension{Tools: subagent.Tools(subagent.Options{
			Spawner:     env.Session.Spawner(),
			Definitions: src.Load(env.Meta.Cwd),
			MaxParallel: cfg.Agents.MaxParallel,
			ScratchDir:  scratch,
			Logger:      src.Logger,
		})}, nil
	}
}

// definitions resolves a sub-agent's definition when its session loads.
func definitions(src subagent.Sources) func(cwd, name string) (host.Definition, error) {
	return func(cwd, name string) (host.Definition, error) {
		d, err := src.Find(cwd, name)
		if err != nil {
			return host.Definition{}, err
		}
		return host.Definition{Tools: d.Tools, Prompt: d.Prompt, MaxTurns: d.MaxTurns}, nil
	}
}
