package host

import (
	"fmt"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// FormatCost says an amount of US dollars with the precision a session's
// spend needs: cents from a dollar up, four decimals below.
func FormatCost(usd float64) string {
	if usd >= 1 {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

// Status is what /status shows on every front door: the permission
// level, then the sandbox, profile, model, context usage, effort,
// thinking, compactions, instructions, tokens and cost (a sub-agent's
// spend included). It reads the log and spends nothing.
func (s *Session) Status() string {
	hs := s
	prof := hs.Profile()
	rows := hs.Engine().Rows()
	var total, last, sub model.Usage
	compactions := 0
	for _, r := range rows {
		switch en := r.Entry.(type) {
		case session.AssistantMessage:
			total = total.Add(en.Usage)
			last = en.Usage
		case session.ToolResult:
			sub = sub.Add(en.Usage) // a sub-agent's spend
		case session.Compaction:
			compactions++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Permission: %s\n", hs.Level())
	if c := hs.Confinement(); c != "" {
		fmt.Fprintf(&b, "Sandbox: %s\n", c)
	}
	if fb, ok := prof.Provider.(interface{ Active() model.Profile }); ok && fb.Active().Name != prof.Name {
		fmt.Fprintf(&b, "Profile: %s, on its fallback %s since a failure\n", prof.Name, fb.Active().Name)
	} else {
		fmt.Fprintf(&b, "Profile: %s\n", prof.Name)
	}
	if prof.Model != "" {
		fmt.Fprintf(&b, "Model: %s\n", prof.Model)
	}
	if prof.ContextWindow > 0 {
		fmt.Fprintf(&b, "Context: %d of %d tokens (%d%%)\n", last.Context(), prof.ContextWindow, last.Context()*100/prof.ContextWindow)
	} else {
		fmt.Fprintf(&b, "Context: %d tokens (window unknown)\n", last.Context())
	}
	rl := hs.Engine().RateLimit()
	if rl == nil && prof.RateLimits != nil {
		rl = prof.RateLimits()
	}
	if rl != nil && rl.String() != "" {
		fmt.Fprintf(&b, "Rate limits: %s\n", rl)
	}
	if prof.ReasoningEffort != "" {
		fmt.Fprintf(&b, "Effort: %s\n", prof.ReasoningEffort)
	} else {
		fmt.Fprintf(&b, "Effort: the provider's default\n")
	}
	fmt.Fprintf(&b, "Thinking: as the model streams it\n")
	fmt.Fprintf(&b, "Compactions: %d\n", compactions)
	if files := hs.Instructions(); len(files) > 0 {
		fmt.Fprintf(&b, "Instructions: %s\n", strings.Join(files, ", "))
	} else {
		fmt.Fprintf(&b, "Instructions: no AGENTS.md found\n")
	}
	all := total.Add(sub)
	fmt.Fprintf(&b, "Tokens: %d input, %d output, %d cache read, %d cache write", all.InputTokens, all.OutputTokens, all.CacheReadTokens, all.CacheWriteTokens)
	if sub != (model.Usage{}) {
		fmt.Fprintf(&b, "\nOf which sub-agents: %d input, %d output, %d cache read, %d cache write", sub.InputTokens, sub.OutputTokens, sub.CacheReadTokens, sub.CacheWriteTokens)
	}
	switch {
	case all.Cost > 0 && sub.Cost > 0:
		fmt.Fprintf(&b, "\nCost: %s estimated, of which sub-agents %s", FormatCost(all.Cost), FormatCost(sub.Cost))
	case all.Cost > 0:
		fmt.Fprintf(&b, "\nCost: %s estimated", FormatCost(all.Cost))
	case all != (model.Usage{}):
		fmt.Fprintf(&b, "\nCost: unknown (no price for the model; a [models.\"ID\"] table in the config sets one)")
	}
	fmt.Fprintf(&b, "\nSession: %s in %s", hs.ID(), hs.Meta().Cwd)
	return b.String()
}
