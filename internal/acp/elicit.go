package acp

import (
	"context"
	"encoding/json"
	"fmt"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// This file puts an MCP server's request for user input to the editor
// with elicitation/create, when the client advertised the mode.

var _ host.Elicitor = (*entry)(nil)

// CreateElicitationRequest is elicitation/create's params, session-scoped.
type CreateElicitationRequest struct {
	SessionID       string          `json:"sessionId"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	ElicitationID   string          `json:"elicitationId,omitempty"`
	URL             string          `json:"url,omitempty"`
	Meta            Meta            `json:"_meta,omitempty"`
}

// CreateElicitationResponse is the user's answer: accept (with the form's
// content), decline or cancel.
type CreateElicitationResponse struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// Elicit implements host.Elicitor. Form and url are checked separately
// against what the client advertised; a mode it did not is declined with
// a notice, as is a request the client fails to answer.
func (e *entry) Elicit(ctx context.Context, el host.Elicitation) (host.ElicitResult, error) {
	decline := host.ElicitResult{Action: host.ElicitDecline}
	caps := e.s.caps().Elicitation
	takes := caps != nil && (el.Mode == host.ElicitForm && caps.Form != nil || el.Mode == host.ElicitURL && caps.URL != nil)
	if !takes {
		e.s.notify(ctx, e.id, e.notice(session.Notice{Severity: session.SeverityWarning,
			Title: fmt.Sprintf("Declined a request for input (%s) from MCP server %s: this editor does not take that kind", el.Mode, el.Server)}))
		return decline, nil
	}
	p := CreateElicitationRequest{SessionID: e.id, Mode: el.Mode, Message: el.Message}
	switch el.Mode {
	case host.ElicitForm:
		p.RequestedSchema = el.Schema
		if len(p.RequestedSchema) == 0 {
			p.RequestedSchema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
	case host.ElicitURL:
		p.URL, p.ElicitationID = el.URL, el.ID
	}
	var resp CreateElicitationResponse
	if err := e.s.conn.Call(ctx, "elicitation/create", p, &resp); err != nil {
		e.s.log.Debug("acp: elicitation unanswered", "session_id", e.id, "err", err)
		return decline, nil
	}
	switch resp.Action {
	case host.ElicitAccept, host.ElicitCancel:
		return host.ElicitResult{Action: resp.Action, Content: resp.Content}, nil
	}
	return decline, nil
}

// dropped tells the client that the MCP servers it sent were ignored:
// meka's come from config.toml.
func (e *entry) dropped(ctx context.Context, n int) {
	if n == 0 {
		return
	}
	servers := "servers"
	if n == 1 {
		servers = "server"
	}
	e.s.notify(ctx, e.id, e.notice(session.Notice{Severity: session.SeverityWarning,
		Title: fmt.Sprintf("Ignored %d MCP %s sent by the editor: meka's MCP servers come from its config.toml", n, servers)}))
}
