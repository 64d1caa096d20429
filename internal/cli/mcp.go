package cli

import (
	"io"
	"log/slog"
	"os"
	"sync"

	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/session"
)

// mcpNotices carries what the MCP manager says about its servers to the
// people concerned: stderr for the terminal and one-shot (never the
// protocol's stdout), and every open session, for ACP clients.
type mcpNotices struct {
	mu sync.Mutex // guards w, h and early
	w  io.Writer  // nil: not written
	h  *host.Host
	// early holds the warnings told before a writer was attached (the
	// servers start with the host, before a front door says where its
	// stderr is), bounded.
	early []string
}

func (n *mcpNotices) notify(_ string, sev mcp.Severity, text string) {
	n.mu.Lock()
	w, h := n.w, n.h
	if w == nil && sev == mcp.SeverityWarning && len(n.early) < 32 {
		n.early = append(n.early, text)
	}
	n.mu.Unlock()
	if w != nil && sev == mcp.SeverityWarning {
		_, _ = io.WriteString(w, "meka: warning: "+text+"\n")
	}
	if h == nil {
		return
	}
	severity := session.SeverityInfo
	if sev == mcp.SeverityWarning {
		severity = session.SeverityWarning
	}
	for _, s := range h.Sessions() {
		s.Announce(session.Notice{Severity: severity, Title: text})
	}
}

// attach sends notices to the host's sessions and, when w is set, to w,
// starting with the warnings told before.
func (n *mcpNotices) attach(h *host.Host, w io.Writer) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.h, n.w = h, w
	if w != nil {
		for _, text := range n.early {
			_, _ = io.WriteString(w, "meka: warning: "+text+"\n")
		}
		n.early = nil
	}
}

// newMCP builds the manager of the servers config.toml names; nil when
// none is configured. Stdio servers start from meka's environment less
// the credentials a child must not see, plus their own env.
func (g *globals) newMCP(cfg *config.Config, log *slog.Logger, n *mcpNotices) *mcp.Manager {
	if len(cfg.MCP.Servers) == 0 {
		return nil
	}
	servers := make([]mcp.Server, 0, len(cfg.MCP.Servers))
	for _, s := range cfg.MCP.Servers {
		servers = append(servers, mcp.Server{
			Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL, Headers: s.Headers,
			Permission: s.Permission, ToolPermissions: s.ToolPermissions, Disabled: s.Disabled,
			StartupTimeout: s.StartupTimeout, ToolTimeout: s.ToolTimeout,
			EnabledTools: s.EnabledTools, DisabledTools: s.DisabledTools, Required: s.Required,
		})
	}
	dflt := cfg.MCP.DefaultPermission
	return mcp.New(mcp.Options{
		Servers:           servers,
		DefaultPermission: &dflt,
		Env:               sandbox.ScrubEnv(os.Environ(), keyVariables(cfg)),
		Getenv:            g.getenv,
		Version:           Version,
		Notify:            n.notify,
		Logger:            log,
	})
}
