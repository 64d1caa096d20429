package host

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/session"
)

// The MCP types front doors meet, so that they need not import the
// client package.
type (
	// Elicitation is an MCP server asking the user for input mid-call.
	Elicitation = mcp.Elicitation
	// ElicitResult is the user's answer to one.
	ElicitResult = mcp.ElicitResult
	// Elicitor is what a front door implements to answer elicitations.
	Elicitor = mcp.Elicitor
	// ElicitorFunc adapts a function to Elicitor.
	ElicitorFunc = mcp.ElicitorFunc
)

// Elicitation modes and answers.
const (
	ElicitForm    = mcp.ModeForm
	ElicitURL     = mcp.ModeURL
	ElicitAccept  = mcp.ActionAccept
	ElicitDecline = mcp.ActionDecline
	ElicitCancel  = mcp.ActionCancel
)

// addMCP gives the session the tools of the configured MCP servers, as
// they are at every request.
func (s *Session) addMCP() {
	m := s.h.opts.MCP
	if !m.Configured() {
		return
	}
	scratch := ""
	if s.dataDir != "" {
		scratch = filepath.Join(s.dataDir, "scratch")
	}
	vision := s.profile.Vision
	b := &mcp.Binding{Elicitor: mcp.ElicitorFunc(s.elicit), ScratchDir: scratch, Vision: func() bool { return vision }}
	s.tools.AddSource(m.Source(b), func(name string, err error) {
		s.h.opts.Logger.Warn("mcp tool not offered", "session_id", s.id, "tool", name, "err", err)
	})
}

// SetElicitor routes MCP elicitations to a front door; nil means nobody
// is attached and every one is declined.
func (s *Session) SetElicitor(e Elicitor) {
	s.mu.Lock()
	s.elicitor = e
	s.mu.Unlock()
}

// elicit puts a server's elicitation to whoever is attached: a
// sub-agent's goes to its parent's front door, and nobody attached is a
// decline the session is told about.
func (s *Session) elicit(ctx context.Context, e Elicitation) (ElicitResult, error) {
	if s.parent != nil {
		return s.parent.elicit(ctx, e)
	}
	s.mu.Lock()
	el := s.elicitor
	s.mu.Unlock()
	if el == nil {
		s.Announce(session.Notice{Severity: session.SeverityWarning,
			Title: fmt.Sprintf("Declined a request for input from MCP server %s: nobody is attached to answer it", e.Server)})
		return ElicitResult{Action: ElicitDecline}, nil
	}
	return el.Elicit(ctx, e)
}

// waitMCP lets a turn wait for the servers' first start, each bounded by
// its startup_timeout; later turns do not wait.
func (s *Session) waitMCP(ctx context.Context) {
	if m := s.h.opts.MCP; m.Configured() {
		_ = m.Wait(ctx) // a required server's failure is the front door's to report
	}
}

// MCPReport is what /mcp shows on every front door: each configured
// server and its state, never why it failed (that can carry a command
// line; the log has it).
func (h *Host) MCPReport() string {
	m := h.opts.MCP
	if !m.Configured() {
		return "No MCP servers are configured. Add them to config.toml as [mcp.servers.NAME] tables."
	}
	var b strings.Builder
	b.WriteString("MCP servers:\n")
	for _, st := range m.Status() {
		var what string
		switch st.State {
		case mcp.StateConnected:
			what = fmt.Sprintf("connected, %d %s", st.Tools, plural(st.Tools, "tool", "tools"))
			if st.Prompts > 0 {
				what += fmt.Sprintf(", %d %s", st.Prompts, plural(st.Prompts, "prompt", "prompts"))
			}
		case mcp.StateStarting:
			what = "starting"
		case mcp.StateFailed:
			what = "failed (see meka's log)"
		case mcp.StateDisabled:
			what = "disabled"
		}
		if st.Required {
			what += ", required"
		}
		fmt.Fprintf(&b, "- %s: %s\n", st.Name, what)
	}
	return strings.TrimRight(b.String(), "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// MCPPrompt is an MCP server's prompt as a slash command: /Name.
type MCPPrompt struct {
	Name        string
	Description string
	// Hint names the argument the words after the command fill.
	Hint string
}

// MCPPrompts lists the prompts of the connected MCP servers.
func (h *Host) MCPPrompts() []MCPPrompt {
	m := h.opts.MCP
	if !m.Configured() {
		return nil
	}
	var out []MCPPrompt
	for _, p := range m.Prompts() {
		mp := MCPPrompt{Name: p.Name, Description: p.Description}
		if len(p.Arguments) > 0 {
			mp.Hint = p.Arguments[0]
		}
		out = append(out, mp)
	}
	return out
}

// RenderMCPPrompt returns the text of the prompt called name with input
// as its first argument, for a front door to send as the user's message.
func (h *Host) RenderMCPPrompt(ctx context.Context, name, input string) (string, error) {
	if !h.opts.MCP.Configured() {
		return "", fmt.Errorf("render prompt %s: %w", name, mcp.ErrNoPrompt)
	}
	return h.opts.MCP.GetPrompt(ctx, name, input)
}
