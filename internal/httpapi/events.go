package httpapi

import (
	"encoding/json"

	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// The feed's types are the shared event vocabulary's (internal/events).
type (
	Entry     = events.Entry
	Event     = events.Event
	FeedStore = events.Store
	frame     = events.Frame
)

// outgoing is the frame an event goes out as, to a stream or a webhook:
// a failed turn's provider text travels only when relaying is on
// (host.RelayNotice, the policy every front door applies).
func (srv *Server) outgoing(e Event) frame {
	f := e.Frame()
	if e.Type != "notice" {
		return f
	}
	var n struct {
		Severity string `json:"severity"`
		Title    string `json:"title"`
		Text     string `json:"text"`
	}
	if json.Unmarshal(e.Data, &n) != nil {
		return f
	}
	kept := host.RelayNotice(session.Notice{Title: n.Title, Description: n.Text}, srv.opts.RelayProviderErrors)
	if kept.Description != n.Text {
		n.Text = kept.Description
		f.Data = mustJSON(n)
	}
	return f
}
