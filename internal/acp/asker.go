package acp

import (
	"bytes"
	"context"
	"encoding/json"

	"meka.dev/meka/permission"
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
	id := req.CallID
	var kind string
	if cs := e.call(req.CallID); cs != nil {
		id, kind = cs.id, kindOf(cs.kind)
	}
	title := req.Title
	if title == "" {
		title = req.Tool
	}
	args := rawJSON(req.Arguments)
	var pretty bytes.Buffer
	if json.Indent(&pretty, args, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(args)
	}
	tc := ToolCallUpdate{ToolCallID: id, Title: &title, Kind: kind, Status: "pending", RawInput: args,
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
		return permission.Deny, nil
	}
	if resp.Outcome.Outcome != "selected" {
		return permission.Deny, nil
	}
	switch resp.Outcome.OptionID {
	case optAllow:
		return permission.Allow, nil
	case optAlwaysAllow:
		return permission.AlwaysAllow, nil
	case optAlwaysDeny:
		return permission.AlwaysDeny, nil
	}
	return permission.Deny, nil
}
