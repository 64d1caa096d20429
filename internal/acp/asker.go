package acp

import (
	"bytes"
	"context"
	"encoding/json"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Permission option ids.
const (
	optAllow       = "allow"
	optAlwaysAllow = "allow_always"
	optDeny        = "reject"
	optAlwaysDeny  = "reject_always"
)

var _ permission.Asker = (*entry)(nil)

// Ask implements permission.Asker with session/request_permission. The
// host bounds the wait (30 minutes, then deny) and a session/cancel ends
// it at once through ctx; a cancelled or failed prompt denies.
func (e *entry) Ask(ctx context.Context, req permission.Request) (permission.Decision, error) {
	title := req.Title
	if title == "" {
		title = req.Tool
	}
	if req.SubAgent != "" {
		// A client that shows the sub-agent as a session is asked there,
		// on the call's own card.
		if c := e.child(req.SessionID); c != nil && e.s.caps().Subagents != nil {
			return c.askOwn(ctx, req, title), nil
		}
		return e.askForSubAgent(ctx, req, title), nil
	}
	return e.askOwn(ctx, req, title), nil
}

// askOwn asks about a call of e's own session, on its card.
func (e *entry) askOwn(ctx context.Context, req permission.Request, title string) permission.Decision {
	id, status := req.CallID, "pending"
	var kind string
	if cs := e.call(req.CallID); cs != nil {
		// The card is out, in progress: the request leaves its status
		// alone, or a client that re-reads it shows the call pending again.
		id, kind, status = cs.id, kindOf(cs.kind), ""
	}
	return e.request(ctx, id, kind, status, title, req)
}

// askForSubAgent puts a sub-agent's call, which the editor never saw, on
// a card of its own naming the sub-agent, and closes the card with the
// answer as the screen says it; the agent_spawn card is left as it was.
func (e *entry) askForSubAgent(ctx context.Context, req permission.Request, title string) permission.Decision {
	e.mu.Lock()
	id := e.ids.assign("subagent-" + req.SessionID[:min(8, len(req.SessionID))] + "-" + req.CallID)
	e.mu.Unlock()
	title = req.SubAgent + ": " + title
	e.s.notify(ctx, e.id, ToolCall{ToolCallID: id, Title: title, Kind: string(tool.KindOther), Status: "pending", RawInput: rawJSON(req.Arguments)})
	d := e.request(ctx, id, "", "pending", title, req)
	status, word := "completed", "allowed"
	switch d {
	case permission.AlwaysAllow:
		word = "always allowed"
	case permission.Deny:
		status, word = "failed", "denied"
	case permission.AlwaysDeny:
		status, word = "failed", "always denied"
	}
	e.s.notify(context.WithoutCancel(ctx), e.id, ToolCallUpdate{ToolCallID: id, Status: status,
		Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock(req.Tool + " " + word))}}})
	return d
}

// request sends session/request_permission for the card id, with status
// when it sets one, and reads the answer; a cancelled or failed request
// denies.
func (e *entry) request(ctx context.Context, id, kind, status, title string, req permission.Request) permission.Decision {
	args := rawJSON(req.Arguments)
	var pretty bytes.Buffer
	if json.Indent(&pretty, args, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(args)
	}
	tc := ToolCallUpdate{ToolCallID: id, Title: &title, Kind: kind, Status: status, RawInput: args,
		Content: []ToolCallContent{{Type: "content", Content: ptr(TextBlock("```json\n" + pretty.String() + "\n```"))}}}
	params := RequestPermissionRequest{SessionID: e.id, ToolCall: tc, Options: []PermissionOption{
		{OptionID: optAllow, Name: "Allow", Kind: "allow_once"},
		{OptionID: optAlwaysAllow, Name: "Always allow any " + req.Tool, Kind: "allow_always"},
		{OptionID: optDeny, Name: "Deny", Kind: "reject_once"},
		{OptionID: optAlwaysDeny, Name: "Always deny any " + req.Tool, Kind: "reject_always"},
	}}
	var resp RequestPermissionResponse
	if err := e.s.conn.Call(ctx, "session/request_permission", params, &resp); err != nil {
		e.s.log.Debug("acp: permission request unanswered", "session_id", e.id, "err", err)
		return permission.Deny
	}
	if resp.Outcome.Outcome != "selected" {
		return permission.Deny
	}
	switch resp.Outcome.OptionID {
	case optAllow:
		return permission.Allow
	case optAlwaysAllow:
		return permission.AlwaysAllow
	case optAlwaysDeny:
		return permission.AlwaysDeny
	}
	return permission.Deny
}
