package host

import (
	"fmt"
	"strings"

	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

const preamble = `You are meka, a coding agent working in the user's workspace. You read, edit and run things with the tools you are given, and you finish what you set out to do: when you say you will do something, do it, or say plainly why not.`

func (h *Host) systemPrompt(meta session.Meta, prof Profile, tools *tool.Registry) string {
	var b strings.Builder
	if h.opts.System != "" {
		b.WriteString(h.opts.System)
	} else {
		b.WriteString(preamble)
	}
	b.WriteString("\n\n# Environment\n")
	fmt.Fprintf(&b, "Working directory: %s\n", meta.Cwd)
	if len(meta.AdditionalDirs) > 0 {
		fmt.Fprintf(&b, "Additional workspace directories (search and file tools cover them too): %s\n", strings.Join(meta.AdditionalDirs, ", "))
	}
	if prof.Model != "" {
		fmt.Fprintf(&b, "Model: %s\n", prof.Model)
	}
	if names := tools.Names(); len(names) > 0 {
		fmt.Fprintf(&b, "Tools: %s\n", strings.Join(names, ", "))
	}
	return b.String()
}
