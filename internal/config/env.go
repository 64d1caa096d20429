package config

import "path/filepath"

// ZeroConfigProfile builds the profile "default" from the environment, read
// through getenv, for a run with no config file: OPENAI_API_KEY (with
// OPENAI_BASE_URL) or else ANTHROPIC_API_KEY (with ANTHROPIC_BASE_URL), and
// MEKA_MODEL for either. ok is false when neither key is set.
func ZeroConfigProfile(getenv func(string) string) (p Profile, ok bool) {
	for _, prov := range []Provider{ProviderOpenAI, ProviderAnthropic} {
		if getenv(DefaultKeyEnv(prov)) == "" {
			continue
		}
		p = EnvProfile(prov, getenv)
		p.Name = "default"
		return p, true
	}
	return Profile{}, false
}

// IsEnvProvider reports whether name is a provider EnvProfile knows:
// "openai" or "anthropic".
func IsEnvProvider(name string) bool {
	return name == string(ProviderOpenAI) || name == string(ProviderAnthropic)
}

// EnvProfile builds the profile named after provider p from the
// environment, read through getenv: the key in DefaultKeyEnv(p), the base
// URL in OPENAI_BASE_URL or ANTHROPIC_BASE_URL, the model in MEKA_MODEL.
// The key may be empty; Profile.NeedsKey says whether that is a problem.
func EnvProfile(p Provider, getenv func(string) string) Profile {
	baseURL := BaseURLEnv(p)
	model := getenv("MEKA_MODEL")
	if model == "" {
		model = DefaultModel(p)
	}
	prof := newProfile(string(p))
	prof.Provider, prof.Model, prof.BaseURL, prof.APIKeyEnv = p, model, getenv(baseURL), DefaultKeyEnv(p)
	if prof.BaseURL != "" {
		prof.BaseURLEnv = baseURL
	}
	return prof
}

// BaseURLEnv is the variable holding provider p's endpoint for profiles
// that set no base_url: OPENAI_BASE_URL (openai, openai-responses) or
// ANTHROPIC_BASE_URL.
func BaseURLEnv(p Provider) string {
	if p == ProviderAnthropic {
		return "ANTHROPIC_BASE_URL"
	}
	return "OPENAI_BASE_URL"
}

// NoProfileHelp is the text to print beside ErrNoProfile: the two ways to
// configure a profile, spelled out.
func NoProfileHelp() string {
	return `meka needs a model profile. Either set a provider key in the environment:

  export OPENAI_API_KEY=...      # optional: OPENAI_BASE_URL; model gpt-4.1 unless MEKA_MODEL is set
  export ANTHROPIC_API_KEY=...   # optional: ANTHROPIC_BASE_URL; model claude-sonnet-4-5 unless MEKA_MODEL is set

or write a profile into the config file, ~/.config/meka/config.toml
($XDG_CONFIG_HOME/meka/config.toml when XDG_CONFIG_HOME is set; $MEKA_CONFIG or
--config name another file):

  default_profile = "main"

  [profiles.main]
  provider = "anthropic"             # openai, openai-responses, anthropic, gemini or script
  model = "claude-sonnet-4-5"
  api_key_env = "ANTHROPIC_API_KEY"  # the variable holding the key, not the key
`
}

// ConfigPath returns the config file to read: $MEKA_CONFIG, else DefaultPath.
// Environment variables are read through getenv.
func ConfigPath(getenv func(string) string) string {
	if p := getenv("MEKA_CONFIG"); p != "" {
		return p
	}
	return DefaultPath(getenv)
}

// DefaultPath returns where the config file lives when nothing names one:
// $XDG_CONFIG_HOME/meka/config.toml, else $HOME/.config/meka/config.toml.
// It is empty when neither variable gives an absolute directory. A missing
// file there means "no config", where a missing file at a path someone
// named is an error; that is the caller's distinction to make.
func DefaultPath(getenv func(string) string) string {
	return xdgPath(getenv, "XDG_CONFIG_HOME", ".config", "config.toml")
}

// AgentsDir returns the directory of the user's sub-agent definitions:
// $XDG_CONFIG_HOME/meka/agents, else $HOME/.config/meka/agents; empty
// when neither variable gives an absolute directory.
func AgentsDir(getenv func(string) string) string {
	return xdgPath(getenv, "XDG_CONFIG_HOME", ".config", "agents")
}

// DataDir returns meka's data directory (session database, logs):
// $MEKA_DATA_DIR, else $XDG_DATA_HOME/meka, else $HOME/.local/share/meka.
// It is empty when none of them gives a directory.
func DataDir(getenv func(string) string) string {
	if d := getenv("MEKA_DATA_DIR"); d != "" {
		return d
	}
	return xdgPath(getenv, "XDG_DATA_HOME", filepath.Join(".local", "share"), "")
}

// xdgPath joins meka's directory under $xdgVar or, when that is unset or
// relative (the XDG spec says to ignore relative values), $HOME/fallback.
func xdgPath(getenv func(string) string, xdgVar, fallback, file string) string {
	base := getenv(xdgVar)
	if !filepath.IsAbs(base) {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		base = filepath.Join(home, fallback)
	}
	return filepath.Join(base, "meka", file)
}
