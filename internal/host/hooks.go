package host

import (
	"fmt"
	"strings"
)

// HookInfo is one of a session's hooks as /hooks shows it: what it runs,
// on what, from which file, and whether it runs.
type HookInfo struct {
	Event    string `json:"event"`
	Matcher  string `json:"matcher"`
	Command  string `json:"command"`
	Source   string `json:"source"`
	Timeout  int    `json:"timeout_seconds"`
	Confined bool   `json:"confined"`
	// Active is false for a hook that does not run, and Why says why
	// (an untrusted workspace).
	Active bool   `json:"active"`
	Why    string `json:"why,omitempty"`
}

// Hooks lists the hooks of session id as they were read when it opened;
// nil when it has none or is not open here.
func (h *Host) Hooks(id string) []HookInfo {
	if h.opts.Hooks == nil {
		return nil
	}
	return h.opts.Hooks(id)
}

// HooksReport is /hooks: the session's hooks, by event, with where each
// comes from.
func (s *Session) HooksReport() string {
	hs := s.h.Hooks(s.id)
	if len(hs) == 0 {
		return "No hooks. meka runs the hooks of [hooks] in config.toml, ~/.claude/settings.json, and a trusted workspace's .claude/settings.json, .claude/settings.local.json and .meka/settings.json (meka trust)."
	}
	var b strings.Builder
	b.WriteString("Hooks:\n")
	for _, k := range hs {
		m := k.Matcher
		if m == "" {
			m = "*"
		}
		fmt.Fprintf(&b, "  %s [%s] %s\n    from %s, timeout %ds", k.Event, m, k.Command, k.Source, k.Timeout)
		if k.Confined {
			b.WriteString(", confined")
		}
		if !k.Active {
			b.WriteString("; not run: " + k.Why)
		}
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}
