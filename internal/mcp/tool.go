package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// remoteTool is a server's tool as listed, shared by every session.
type remoteTool struct {
	// s is the server the tool belongs to; nil for a recorded tool whose
	// server is no longer configured.
	s        *server
	server   string // the server's name
	name     string // meka's
	remote   string // the server's
	desc     string
	schema   json.RawMessage
	readOnly bool
	titleArg string // the argument that identifies a call, "" for none
}

func newRemoteTool(s *server, t *sdk.Tool) (*remoteTool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil || len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if err := objectSchema(schema); err != nil {
		return nil, err
	}
	desc := t.Description
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	if desc == "" {
		desc = t.Title
	}
	rt := &remoteTool{s: s, server: s.cfg.Name, name: ToolName(s.cfg.Name, t.Name), remote: t.Name,
		desc: desc, schema: schema, titleArg: identifyingArg(schema)}
	rt.readOnly = t.Annotations != nil && t.Annotations.ReadOnlyHint
	return rt, nil
}

// objectSchema checks that a tool's inputSchema is what a tool's
// parameters must be for every provider: a JSON Schema object, of type
// object when it says. One that is not would fail every request that
// offers it.
func objectSchema(schema json.RawMessage) error {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(schema, &s); err != nil || s == nil {
		return fmt.Errorf("its inputSchema is not a JSON Schema object (it is %s)", jsonKind(schema))
	}
	if typ, ok := s["type"]; ok && string(typ) != `"object"` {
		return fmt.Errorf(`its inputSchema is not a JSON Schema object: its type is %s, not "object"`, cutJSON(typ))
	}
	return nil
}

// jsonKind names the kind of a JSON value.
func jsonKind(v json.RawMessage) string {
	switch t := strings.TrimSpace(string(v)); {
	case t == "":
		return "empty"
	case t[0] == '"':
		return "a string"
	case t[0] == '[':
		return "an array"
	case t == "true" || t == "false":
		return "a boolean"
	case t == "null":
		return "null"
	default:
		return "a number"
	}
}

// cutJSON is a JSON value short enough to quote in a notice.
func cutJSON(v json.RawMessage) string {
	if r := []rune(string(v)); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return string(v)
}

// identifyingArg picks the argument a call's title shows: a well-known
// name among the schema's string properties, else its first required
// string property.
func identifyingArg(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return ""
	}
	isString := func(n string) bool {
		p, ok := s.Properties[n]
		return ok && p.Type == "string"
	}
	for _, n := range []string{"path", "file", "filename", "uri", "url", "query", "command", "name", "id"} {
		if isString(n) {
			return n
		}
	}
	for _, n := range s.Required {
		if isString(n) {
			return n
		}
	}
	return ""
}

// Binding is what a session's view of the servers carries: who answers
// elicitations, where large results go, whether images reach the model.
type Binding struct {
	// Elicitor answers a server's elicitation raised during one of the
	// session's calls; nil declines every one.
	Elicitor Elicitor
	// ScratchDir is where a result too large to carry inline is written;
	// empty cuts it instead.
	ScratchDir string
	// Now stamps the names of scratch files; nil is time.Now.
	Now func() time.Time
	// Vision reports whether the session's model reads images; nil means
	// it does not.
	Vision func() bool
}

// Source returns the tools of every server as a tool.Source bound to b.
func (m *Manager) Source(b *Binding) tool.Source { return &source{m: m, b: b} }

type source struct {
	m *Manager
	b *Binding
}

func (s *source) Version() uint64 { return s.m.Version() }

func (s *source) Tools() []tool.Tool {
	rts := s.m.currentTools()
	out := make([]tool.Tool, len(rts))
	for i, rt := range rts {
		out[i] = &Tool{m: s.m, rt: rt, b: s.b}
	}
	return out
}

// Tool is a server's tool as one session sees it.
type Tool struct {
	m  *Manager
	rt *remoteTool
	b  *Binding
	// pinned is set for a tool a session's record offers: its level
	// follows the server's current annotations when it lists the tool.
	pinned bool
}

var (
	_ tool.Tool   = (*Tool)(nil)
	_ tool.Titler = (*Tool)(nil)
)

// Server returns the name of the server the tool belongs to.
func (t *Tool) Server() string { return t.rt.server }

// Spec describes the tool. Its level is resolved at every call, from the
// server's config and the tool's annotations as last listed.
func (t *Tool) Spec() tool.Spec {
	rt := t.rt
	kind := tool.KindOther
	if rt.readOnly {
		kind = tool.KindRead
	}
	return tool.Spec{
		Name:            rt.name,
		Description:     rt.desc,
		Schema:          rt.schema,
		Level:           t.level(),
		Kind:            kind,
		ParallelSafe:    rt.readOnly,
		ServerValidated: true,
	}
}

// level resolves the tool's level now. A recorded tool counts as
// read-only only while the server, when it lists the tool, still says so.
func (t *Tool) level() permission.Level {
	rt := t.rt
	if rt.s == nil {
		return t.m.level(Server{}, rt.remote, rt.readOnly)
	}
	readOnly := rt.readOnly
	if t.pinned && readOnly {
		tools, _ := rt.s.listing()
		for _, live := range tools {
			if live.remote == rt.remote {
				readOnly = live.readOnly
				break
			}
		}
	}
	return t.m.level(rt.s.cfg, rt.remote, readOnly)
}

// Title is the tool's name and the argument that identifies the call.
func (t *Tool) Title(args json.RawMessage) string {
	if t.rt.titleArg == "" {
		return t.rt.name
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return t.rt.name
	}
	var v string
	if json.Unmarshal(m[t.rt.titleArg], &v) != nil || v == "" {
		return t.rt.name
	}
	v = strings.Join(strings.Fields(v), " ")
	if r := []rune(v); len(r) > 120 {
		v = string(r[:119]) + "…"
	}
	return t.rt.name + " " + v
}

// Run calls the tool on its server. A server that is not connected is
// tool.ErrUnavailable; one that does not answer within tool_timeout is a
// failed result saying so, and the call is cancelled on the server.
func (t *Tool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	s := t.rt.s
	if s == nil {
		return tool.Result{}, fmt.Errorf("%w: the MCP server %s is not connected: it is no longer configured; do without it", tool.ErrUnavailable, t.rt.server)
	}
	cs := s.await(ctx)
	if cs == nil {
		why := ""
		if st := s.status(); st.State == StateFailed && st.Reason != "" {
			why = " (it failed to start: " + st.Reason + ")"
		}
		return tool.Result{}, fmt.Errorf("%w: the MCP server %s is not connected%s; try again later or do without it", tool.ErrUnavailable, s.cfg.Name, why)
	}
	var args map[string]any
	if len(call.Arguments) > 0 {
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return tool.Errorf("%s was not run: the arguments are not a JSON object: %v", t.rt.name, err), nil
		}
	}
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ToolTimeout)
	defer cancel()
	done := s.track(cctx, t.b)
	defer done()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: t.rt.remote, Arguments: args})
	switch {
	case ctx.Err() != nil:
		return tool.Result{}, fmt.Errorf("call %s: %w", t.rt.name, context.Cause(ctx))
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return tool.Errorf("%s did not answer within %s (its tool_timeout), so the call was cancelled.", t.rt.name, s.cfg.ToolTimeout), nil
	case err != nil && !serverAnswer(err):
		// Not the server's answer: the connection failed under the call.
		s.m.opts.Logger.Info("mcp: call failed", "server", s.cfg.Name, "tool", t.rt.remote, "err", err)
		// An HTTP connection can fail without its session ending; ending
		// it makes the server's loop connect again.
		s.lost(cs)
		return tool.Result{}, fmt.Errorf("%w: the MCP server %s disconnected during the call: %s", tool.ErrUnavailable, s.cfg.Name, s.why(err))
	case err != nil:
		return tool.Errorf("%s failed: %v", t.rt.name, err), nil
	}
	return t.result(call, res), nil
}

// codeRejected is the SDK's code for a message its transport could not
// deliver (an HTTP error status): a failed connection, not an answer.
const codeRejected = -32005

// serverAnswer reports whether err is the server's own error reply, as
// opposed to the connection failing.
func serverAnswer(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code != codeRejected
}

// track records a call in flight, for routing the server's elicitation.
func (s *server) track(ctx context.Context, b *Binding) (done func()) {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = make(map[uint64]*inflight)
	}
	s.nextCall++
	id := s.nextCall
	s.calls[id] = &inflight{ctx: ctx, binding: b}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
	}
}

// newest returns the most recent call in flight, nil when none is.
func (s *server) newest() *inflight {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best uint64
	for id := range s.calls {
		best = max(best, id)
	}
	return s.calls[best]
}

// Level resolves the level a call of the server tool named name (meka's
// name) needs, as Spec does; ok is false when no listed tool has it.
func (m *Manager) Level(name string) (permission.Level, bool) {
	for _, rt := range m.currentTools() {
		if rt.name == name {
			return m.level(rt.s.cfg, rt.remote, rt.readOnly), true
		}
	}
	return 0, false
}
