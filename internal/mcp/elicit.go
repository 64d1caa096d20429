package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitation modes.
const (
	ModeForm = "form"
	ModeURL  = "url"
)

// Elicitation is a server asking the user for input during a call.
type Elicitation struct {
	Server  string
	Mode    string // ModeForm or ModeURL
	Message string
	// Schema is the form's JSON schema (form mode).
	Schema json.RawMessage
	// URL and ID are the page to open and the elicitation's id (url mode).
	URL string
	ID  string
}

// Actions an answer takes.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitResult is the user's answer.
type ElicitResult struct {
	Action string
	// Content holds the form's values when Action is ActionAccept.
	Content map[string]any
}

// Elicitor puts an elicitation to whoever is attached to a session. It
// blocks until an answer or ctx's end; an error counts as a decline. Safe
// for concurrent use.
type Elicitor interface {
	Elicit(ctx context.Context, e Elicitation) (ElicitResult, error)
}

// ElicitorFunc adapts a function to Elicitor.
type ElicitorFunc func(ctx context.Context, e Elicitation) (ElicitResult, error)

func (f ElicitorFunc) Elicit(ctx context.Context, e Elicitation) (ElicitResult, error) {
	return f(ctx, e)
}

// elicit answers a server's elicitation/create: it goes to the session of
// the newest call in flight on that server, and is declined when there is
// none or nobody there answers. It ends with that call.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	decline := &sdk.ElicitResult{Action: ActionDecline}
	call := s.newest()
	if call == nil || call.binding == nil || call.binding.Elicitor == nil {
		return decline, nil
	}
	p := req.Params
	e := Elicitation{Server: s.cfg.Name, Mode: p.Mode, Message: p.Message, URL: p.URL, ID: p.ElicitationID}
	if e.Mode == "" {
		e.Mode = ModeForm
		if p.URL != "" {
			e.Mode = ModeURL
		}
	}
	if p.RequestedSchema != nil {
		if js, err := json.Marshal(p.RequestedSchema); err == nil {
			e.Schema = js
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(call.ctx, cancel)
	defer stop()
	res, err := call.binding.Elicitor.Elicit(ctx, e)
	if err != nil {
		s.m.opts.Logger.Info("mcp: elicitation not answered", "server", s.cfg.Name, "err", err)
		return decline, nil
	}
	switch res.Action {
	case ActionAccept:
		return &sdk.ElicitResult{Action: ActionAccept, Content: res.Content}, nil
	case ActionCancel:
		return &sdk.ElicitResult{Action: ActionCancel}, nil
	}
	return decline, nil
}
