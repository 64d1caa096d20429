package cli

import (
	"fmt"
	"strings"

	"meka.dev/meka/internal/config"
)

// inertKeys are keys the config parser accepts that this build does not
// act on yet, by their schema path (config.Keys) or a table's prefix. A
// file that sets one loads, so a file written for a later meka still
// works, but meka says so on stderr rather than ignore it silently.
// docs/config.md marks each "Not used yet"; a test holds the two together.
var inertKeys = []struct {
	key, why string
	// applies, when set, says whether the key is inert under cfg.
	applies func(cfg *config.Config) bool
}{
	{key: "tools.plan_check_completion", why: "the checklist always holds a turn with open items; the key applies to update_plan and write_todos", applies: checklistOnly},
	{key: "tools.max_completion_nudges", why: "the checklist has its own caps; the key applies to update_plan and write_todos", applies: checklistOnly},
}

// checklistOnly reports whether every session runs the checklist dialect.
func checklistOnly(cfg *config.Config) bool {
	if cfg.Tools.Plan != config.PlanChecklist {
		return false
	}
	for _, p := range cfg.Profiles {
		if p.Plan != "" && p.Plan != config.PlanChecklist {
			return false
		}
	}
	return true
}

// warnInert writes one warning for each inert key cfg's file sets.
func (g *globals) warnInert(cfg *config.Config) {
	for _, k := range inertKeys {
		if k.applies != nil && !k.applies(cfg) {
			continue
		}
		for _, s := range cfg.Settings {
			if s.Schema == k.key || strings.HasPrefix(s.Schema, k.key+".") {
				fmt.Fprintf(g.stderr, "meka: warning: %s:%d: %s does nothing yet: %s\n", cfg.File, s.Line, s.Key, k.why)
				break
			}
		}
	}
}
