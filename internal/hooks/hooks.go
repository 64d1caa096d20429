package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// DefaultMaxNudges is how many times one turn may be kept going by stop
// interceptors (a checklist's nudges and Stop hooks together) before a
// Stop hook is no longer obeyed: the checklist's cap per turn.
const DefaultMaxNudges = 9

// Options configure a session's hooks.
type Options struct {
	Set    *Set
	Runner *Runner
	// SessionID and Cwd go on every hook's stdin.
	SessionID string
	Cwd       string
	// PermissionMode names the session's mode in Claude Code's words
	// (default, plan, acceptEdits, bypassPermissions); nil says default.
	PermissionMode func() string
	// MaxNudges replaces DefaultMaxNudges; StopInfo.Continued counts
	// against it.
	MaxNudges int
	// Subagent makes the turn's end fire SubagentStop instead of Stop; a
	// sub-agent's session fires no SessionStart or SessionEnd, which are
	// its parent's.
	Subagent bool
	// AgentType names a sub-agent's kind on SubagentStop's stdin.
	AgentType string
	// Model is SessionStart's model field.
	Model string
	// Pending are rows to store with the session's first prompt: the
	// notice listing an untrusted workspace's hooks, a settings file that
	// could not be read.
	Pending []session.Entry
}

// Hooks runs a session's hooks at the engine's seams: a tool guard
// (PreToolUse, PostToolUse), a prompt guard (UserPromptSubmit) and a stop
// interceptor (Stop, SubagentStop). Fire runs the events the host raises
// itself (SessionStart, SessionEnd, PreCompact, Notification).
type Hooks struct {
	opts    Options
	started atomic.Bool // SessionStart fired

	mu      sync.Mutex
	pending []session.Entry // rows to store with the next prompt or request
	notes   sync.WaitGroup  // Notification hooks running
}

var (
	_ agent.ToolRecorder          = (*Hooks)(nil)
	_ agent.CompactionContributor = (*Hooks)(nil)
	_ agent.ToolGuard             = (*Hooks)(nil)
	_ agent.PromptGuard           = (*Hooks)(nil)
	_ agent.StopInterceptor       = (*Hooks)(nil)
)

// New returns a session's hooks.
func New(opts Options) *Hooks {
	if opts.MaxNudges <= 0 {
		opts.MaxNudges = DefaultMaxNudges
	}
	return &Hooks{opts: opts, pending: append([]session.Entry(nil), opts.Pending...)}
}

func (h *Hooks) keep(es []session.Entry) {
	h.mu.Lock()
	h.pending = append(h.pending, es...)
	h.mu.Unlock()
}

func (h *Hooks) take() []session.Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.pending
	h.pending = nil
	return out
}

// approval runs the Notification hooks as an approval waits for a
// person, beside the question rather than before it; their rows are
// stored before the next request, or as the session closes.
func (h *Hooks) approval(ctx context.Context, req permission.Request) {
	ms := h.opts.Set.Match(Notification, "permission_prompt")
	if len(ms) == 0 {
		return
	}
	fields := map[string]any{"notification_type": "permission_prompt", "title": "meka",
		"message": fmt.Sprintf("meka needs your permission to use %s", req.Tool)}
	h.notes.Add(1)
	go func() {
		defer h.notes.Done()
		// Not the question's context: answering must not kill the hook.
		d := h.Fire(context.WithoutCancel(ctx), Notification, "permission_prompt", req.CallID, fields)
		h.keep(d.Entries())
	}()
}

// end runs the SessionEnd hooks as the session closes, once the
// Notification hooks still running are done, and returns every row not
// stored yet.
func (h *Hooks) end(ctx context.Context) []session.Entry {
	h.notes.Wait()
	if h.opts.Subagent {
		return h.take()
	}
	d := h.Fire(context.WithoutCancel(ctx), SessionEnd, "other", "", map[string]any{"reason": "other"})
	h.keep(d.Entries())
	return h.take()
}

// RecordTools stores the rows of hooks that ran where no call or prompt
// could carry them (PreCompact), before the next request.
func (h *Hooks) RecordTools(context.Context, agent.RequestInfo) []session.Entry { return h.take() }

// CompactionText runs the PreCompact hooks as the engine compacts; they
// add nothing to the summary.
func (h *Hooks) CompactionText(ctx context.Context) string {
	d := h.Fire(ctx, PreCompact, "auto", "", map[string]any{"trigger": "auto", "custom_instructions": ""})
	h.keep(d.Entries())
	return ""
}

// Extension returns what the hooks add to an engine: only the seams some
// hook is set for, so that a session without hooks pays nothing.
func (h *Hooks) Extension() agent.Extension {
	var x agent.Extension
	s := h.opts.Set
	if s.Has(PreToolUse) || s.Has(PostToolUse) {
		x.Guards = append(x.Guards, h)
	}
	if s.Has(UserPromptSubmit) || s.Has(SessionStart) || len(h.opts.Pending) > 0 {
		x.PromptGuards = append(x.PromptGuards, h)
	}
	if s.Has(PreCompact) {
		x.Compactors = append(x.Compactors, h)
	}
	if s.Has(PreCompact) || s.Has(Notification) {
		x.Recorders = append(x.Recorders, h)
	}
	if s.Has(Notification) {
		x.Approvals = append(x.Approvals, h.approval)
	}
	if (s.Has(SessionEnd) && !h.opts.Subagent) || s.Has(Notification) {
		x.Closers = append(x.Closers, h.end)
	}
	if s.Has(h.stopEvent()) {
		x.Interceptors = append(x.Interceptors, h)
	}
	return x
}

func (h *Hooks) stopEvent() string {
	if h.opts.Subagent {
		return SubagentStop
	}
	return Stop
}

// Fire runs event's hooks whose matcher matches target, with fields added
// to the common stdin, and returns what they decided. A set with no hook
// for event returns the zero Decision without allocating.
func (h *Hooks) Fire(ctx context.Context, event, target, callID string, fields map[string]any) Decision {
	ms := h.opts.Set.Match(event, target)
	if len(ms) == 0 {
		return Decision{}
	}
	outs := h.opts.Runner.RunAll(ctx, ms, func(m Match) []byte { return h.stdin(event, m, fields) })
	return Decide(event, callID, outs)
}

// stdin is the JSON a hook reads: Claude Code's common fields, then the
// event's own. transcript_path is left out: meka keeps no transcript
// file, and an empty path would send scripts looking for one.
func (h *Hooks) stdin(event string, m Match, fields map[string]any) []byte {
	mode := "default"
	if h.opts.PermissionMode != nil {
		mode = h.opts.PermissionMode()
	}
	in := make(map[string]any, len(fields)+5)
	in["session_id"] = h.opts.SessionID
	in["cwd"] = h.opts.Cwd
	in["permission_mode"] = mode
	in["hook_event_name"] = event
	for k, v := range fields {
		in[k] = v
	}
	if isToolEvent(event) {
		in["tool_name"] = m.Name
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Every value is built here from JSON-safe parts.
		panic(fmt.Sprintf("hooks: stdin: %v", err))
	}
	return b
}

// BeforeTool runs the PreToolUse hooks.
func (h *Hooks) BeforeTool(ctx context.Context, info agent.ToolInfo) agent.ToolVerdict {
	if len(h.opts.Set.byEvent[PreToolUse]) == 0 {
		return agent.ToolVerdict{}
	}
	d := h.Fire(ctx, PreToolUse, info.Call.Name, info.Call.ID, map[string]any{
		"tool_input": json.RawMessage(info.Call.Arguments), "tool_use_id": info.Call.ID})
	v := agent.ToolVerdict{Entries: d.Entries(), Context: strings.Join(d.Context, "\n")}
	switch {
	case d.Stop:
		v.StopTurn = true
		v.Entries = append(v.Entries, stopNotice(d))
	case d.Block:
		v.Refuse = d.Reason
	default:
		v.Arguments = d.UpdatedInput
		if d.Permission == Ask {
			v.Ask, v.AskReason = true, d.PermissionReason
		}
	}
	return v
}

// AfterTool runs the PostToolUse hooks.
func (h *Hooks) AfterTool(ctx context.Context, info agent.ToolInfo, result session.ToolResult) agent.AfterVerdict {
	if len(h.opts.Set.byEvent[PostToolUse]) == 0 {
		return agent.AfterVerdict{}
	}
	d := h.Fire(ctx, PostToolUse, info.Call.Name, info.Call.ID, map[string]any{
		"tool_input":  json.RawMessage(info.Call.Arguments),
		"tool_use_id": info.Call.ID,
		"tool_response": map[string]any{"status": events.ToolStatus(result.Status),
			"is_error": result.Status != session.StatusOK, "content": events.Content(result.Content),
			"text": text(result.Content)},
	})
	v := agent.AfterVerdict{Entries: d.Entries()}
	var ctxs []string
	if d.Block {
		// The call already ran: the reason goes to the model with its
		// result.
		ctxs = append(ctxs, "PostToolUse hook: "+d.Reason)
	}
	ctxs = append(ctxs, d.Context...)
	v.Context = strings.Join(ctxs, "\n")
	if d.Stop {
		v.StopTurn = true
		v.Entries = append(v.Entries, stopNotice(d))
	}
	return v
}

// BeforePrompt runs the UserPromptSubmit hooks.
func (h *Hooks) BeforePrompt(ctx context.Context, info agent.PromptInfo) agent.PromptVerdict {
	pending := h.take()
	var ctxs []string
	if !h.started.Swap(true) && !h.opts.Subagent {
		// SessionStart fires as the session's engine takes its first
		// prompt: its context rides that prompt, as Claude Code's rides
		// the first request.
		source := "startup"
		if info.Turn > 1 {
			source = "resume"
		}
		s := h.Fire(ctx, SessionStart, source, "", map[string]any{"source": source, "model": h.opts.Model})
		pending = append(pending, s.Entries()...)
		ctxs = append(ctxs, s.Context...)
	}
	d := h.Fire(ctx, UserPromptSubmit, "", "", map[string]any{"prompt": text(info.Input.Parts)})
	ctxs = append(ctxs, d.Context...)
	v := agent.PromptVerdict{Entries: append(pending, d.Entries()...), Context: strings.Join(ctxs, "\n")}
	switch {
	case d.Stop:
		v.Refuse = d.StopReason
	case d.Block:
		v.Refuse = d.Reason
	}
	return v
}

// BeforeStop runs the Stop (or SubagentStop) hooks: one that blocks keeps
// the turn going with its reason as the instruction, until the turn has
// been kept going MaxNudges times.
func (h *Hooks) BeforeStop(ctx context.Context, info agent.StopInfo) agent.StopDecision {
	ev := h.stopEvent()
	fields := map[string]any{"stop_hook_active": info.Continued > 0, "last_assistant_message": info.Reply}
	if h.opts.Subagent {
		fields["agent_id"] = h.opts.SessionID
		fields["agent_type"] = h.opts.AgentType
	}
	d := h.Fire(ctx, ev, "", "", fields)
	out := agent.StopDecision{Entries: d.Entries()}
	switch {
	case d.Stop:
		n := stopNotice(d)
		out.Notice, out.Stop = &n, agent.StopHook
	case d.Block && info.Continued >= h.opts.MaxNudges:
		out.Notice = &session.Notice{Severity: session.SeverityWarning,
			Title:       fmt.Sprintf("%s hook ignored: the turn was already kept going %d times (the cap)", ev, info.Continued),
			Description: d.Reason}
	case d.Block:
		out.Continue = true
		out.Message = fmt.Sprintf("[meka] A %s hook did not let the turn end: %s", ev, d.Reason)
	}
	return out
}

func stopNotice(d Decision) session.Notice {
	return session.Notice{Severity: session.SeverityWarning, Title: "Turn stopped by a hook", Description: d.StopReason}
}

// text joins the text parts of ps.
func text(ps model.Parts) string {
	var b strings.Builder
	for _, p := range ps {
		if t, ok := p.(model.Text); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
