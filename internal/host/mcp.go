package host

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"meka.dev/meka/agent"
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
// its log records them (see mcpRecord), and returns the fold and the
// recorder that keep that record.
func (s *Session) addMCP() *mcpRecord {
	m := s.h.opts.MCP
	if !m.Configured() {
		// With no server configured a log that recorded tools still gets
		// them back, as for a server removed from the config: the first
		// request offers them (their calls fail as not connected), the next
		// records that they are gone and tells the model.
		m = mcp.New(mcp.Options{})
	}
	scratch := ""
	if s.dataDir != "" {
		scratch = filepath.Join(s.dataDir, "scratch")
	}
	vision := s.profile.Vision
	b := &mcp.Binding{Elicitor: mcp.ElicitorFunc(s.elicit), ScratchDir: scratch, Now: s.h.opts.Now, Vision: func() bool { return vision }}
	r := &mcpRecord{m: m}
	mode, budget := s.h.opts.ToolSearch, s.h.opts.ToolSearchBudget
	if mode == "" {
		mode = mcp.SearchAuto
	}
	if budget <= 0 {
		budget = 10 << 10
	}
	r.search = &searchFold{src: mcp.NewSearched(m.RecordedSource(b, &r.rec), mode, budget)}
	s.tools.AddSource(r.search.src, func(name string, err error) {
		s.h.opts.Logger.Warn("mcp tool not offered", "session_id", s.id, "tool", name, "err", err)
	})
	return r
}

// mcpToolSource is the ToolSet source of the MCP servers' tools.
const mcpToolSource = "mcp"

// mcpRecord keeps the MCP tool set a session's model is offered in its
// log. As a fold it rebuilds the set from the log's tool_set rows (so
// resume, fork and rewind offer the set as of their last row); as the
// engine's recorder it compares the servers' lists with it before each
// request and returns the row recording a difference. The first request
// after the session is opened carries the recorded set unchanged (its
// prompt-cache prefix is the bytes the last request before sent); the
// servers' lists are taken from the next one on. A log with no tool_set
// row (a session stored before they were kept) offers the lists as they
// are, and its first request records them.
type mcpRecord struct {
	m   *mcp.Manager
	rec mcp.Record
	// asked is set once the recorder was asked, from the turn's goroutine.
	asked bool
	// search keeps which tools tool_search found.
	search *searchFold
}

// searchFold keeps which MCP tools the model found with tool_search, as
// the log's accepted searches say, so that resume, fork and rewind offer
// the same tools.
type searchFold struct{ src *mcp.Searched }

func (f *searchFold) Name() string { return "tool_search" }
func (f *searchFold) Reset()       { f.src.Reset() }

func (f *searchFold) Restore(state json.RawMessage) error {
	var names []string
	if err := json.Unmarshal(state, &names); err != nil {
		return err
	}
	f.src.Set(names)
	return nil
}

func (f *searchFold) Checkpoint() (json.RawMessage, error) { return json.Marshal(f.src.FoundNames()) }

func (f *searchFold) Apply(st session.Step) {
	r, ok := st.Entry.(session.ToolResult)
	if !ok || r.Name != mcp.SearchToolName || !r.Accepted() {
		return
	}
	var found mcp.SearchState
	if json.Unmarshal(r.State, &found) == nil {
		f.src.Found(found.Found)
	}
}

var (
	_ session.Fold       = (*mcpRecord)(nil)
	_ agent.ToolRecorder = (*mcpRecord)(nil)
)

func (r *mcpRecord) Name() string { return "mcp_tools" }

func (r *mcpRecord) Reset() { r.rec.Clear() }

func (r *mcpRecord) Restore(state json.RawMessage) error {
	var defs []session.ToolDef
	if err := json.Unmarshal(state, &defs); err != nil {
		return err
	}
	if defs == nil {
		r.rec.Clear() // nothing was recorded at the boundary
		return nil
	}
	r.rec.Set(fromToolDefs(defs))
	return nil
}

func (r *mcpRecord) Checkpoint() (json.RawMessage, error) {
	defs, ok := r.rec.Get()
	if !ok {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(toToolDefs(defs))
}

func (r *mcpRecord) Apply(st session.Step) {
	ts, ok := st.Entry.(session.ToolSet)
	if !ok || ts.Source != mcpToolSource {
		return
	}
	cur, _ := r.rec.Get()
	byName := make(map[string]mcp.Def, len(cur)+len(ts.Tools))
	for _, d := range cur {
		byName[d.Name] = d
	}
	for _, n := range ts.Removed {
		delete(byName, n)
	}
	for _, d := range fromToolDefs(ts.Tools) {
		byName[d.Name] = d
	}
	next := make([]mcp.Def, 0, len(byName))
	for _, d := range byName {
		next = append(next, d)
	}
	r.rec.Set(next) // sorts
}

// RecordTools returns the row recording how the servers' lists differ
// from the recorded set, if they do.
func (r *mcpRecord) RecordTools(context.Context, agent.RequestInfo) []session.Entry {
	cur, recorded := r.rec.Get()
	first := !r.asked
	r.asked = true
	if recorded && first {
		return nil
	}
	next := r.m.Reconcile(cur)
	if !recorded && len(next) == 0 {
		return nil
	}
	var change session.ToolSet
	old := make(map[string]mcp.Def, len(cur))
	for _, d := range cur {
		old[d.Name] = d
	}
	kept := make(map[string]bool, len(next))
	var added []mcp.Def
	for _, d := range next {
		kept[d.Name] = true
		if o, ok := old[d.Name]; !ok || !o.Equal(d) {
			added = append(added, d)
		}
	}
	for _, d := range cur {
		if !kept[d.Name] {
			change.Removed = append(change.Removed, d.Name)
		}
	}
	if recorded && len(added) == 0 && len(change.Removed) == 0 {
		return nil
	}
	change.Source, change.Tools = mcpToolSource, toToolDefs(added)
	return []session.Entry{change}
}

func toToolDefs(defs []mcp.Def) []session.ToolDef {
	out := make([]session.ToolDef, len(defs))
	for i, d := range defs {
		out[i] = session.ToolDef{Name: d.Name, Description: d.Description, Schema: d.Schema, Server: d.Server, Remote: d.Remote, ReadOnly: d.ReadOnly}
	}
	return out
}

func fromToolDefs(defs []session.ToolDef) []mcp.Def {
	out := make([]mcp.Def, len(defs))
	for i, d := range defs {
		out[i] = mcp.Def{Name: d.Name, Description: d.Description, Schema: d.Schema, Server: d.Server, Remote: d.Remote, ReadOnly: d.ReadOnly}
	}
	return out
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
// server and its state, and why one failed in words that never carry its
// command line (the log at -v has the error whole).
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
			what = "failed: " + st.Reason
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
