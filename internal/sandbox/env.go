package sandbox

import (
	"path"
	"slices"
	"strings"

	"meka.dev/meka/internal/sandbox/credential"
)

// confinedEnvNames are the variables a confined command gets from meka's
// environment, besides the LC_* ones and what the config passes through:
// what programs need to find themselves, their home and their locale,
// nothing that carries a credential.
var confinedEnvNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR"}

// ConfinedEnv returns the environment of a confined command: the entries
// of env whose names are PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG,
// LC_*, TZ or TMPDIR, or match one of the passthrough globs (path.Match
// syntax: "GOFLAGS", "NPM_CONFIG_*_URL") and are no credential
// (credential.Name). An allow-list, so a secret under a
// name nobody thought of stays out. env is not modified.
func ConfinedEnv(env []string, passthrough []string) []string {
	out := make([]string, 0, len(confinedEnvNames))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		// A credential stays out whatever the globs say (the config
		// refuses a glob that would pass one).
		if slices.Contains(confinedEnvNames, name) || strings.HasPrefix(name, "LC_") || passes(name, passthrough) && !credential.Name(name) {
			out = append(out, kv)
		}
	}
	return out
}

func passes(name string, globs []string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// ScrubEnv returns env ("NAME=value" entries) without the credentials a
// child must not see: every name in extraNames (the provider key variables
// the profiles name, matched exactly) and every name matching *_API_KEY,
// *_TOKEN or *_SECRET (credential.Name). Confined commands get
// ConfinedEnv's allow-list instead; this deny-list is what unrestricted
// commands keep. Entries without '=' are dropped as malformed. env
// is not modified.
func ScrubEnv(env []string, extraNames []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || slices.Contains(extraNames, name) || credential.Name(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// setEnv returns env with name set to value, replacing earlier entries.
func setEnv(env []string, name, value string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		n, _, _ := strings.Cut(kv, "=")
		return n == name
	})
	return append(out, name+"="+value)
}

// getEnv returns the value of name in env, the last entry winning as in
// exec.
func getEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}
