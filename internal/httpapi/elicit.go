package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/tool"
)

// elicitation is an MCP server's request for input, put to whoever drives
// the session over HTTP, as approvals are.
type elicitation struct {
	ID        string          `json:"elicitation_id"`
	TurnID    string          `json:"turn_id,omitempty"`
	Server    string          `json:"server"`
	Mode      string          `json:"mode"` // form or url
	Message   string          `json:"message"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	URL       string          `json:"url,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
	pending[host.ElicitResult]
	Action string `json:"action,omitempty"`
}

// elicit is the session's Elicitor: an elicitation.requested event and a
// pending elicitation, answered over HTTP; declined when the turn ends,
// after the approval timeout, or at once for a scheduled turn.
func (a *attached) elicit(ctx context.Context, e host.Elicitation) (host.ElicitResult, error) {
	el := &elicitation{ID: uuid.Must(uuid.NewV7()).String(), Server: e.Server, Mode: e.Mode, Message: e.Message,
		Schema: e.Schema, URL: e.URL, ExpiresAt: a.srv.opts.Now().UTC().Add(tool.DefaultApprovalTimeout),
		pending: newPending[host.ElicitResult]()}
	a.mu.Lock()
	unattended := a.current != nil && a.current.Source == "schedule"
	if a.current != nil {
		el.TurnID = a.current.ID
	}
	data := mustJSON(el) // before a client can see it and answer
	pruneDone(a.elicitations, func(el *elicitation) bool { return !el.open() })
	a.elicitations[el.ID] = el
	a.mu.Unlock()
	a.srv.record(ctx, Entry{SessionID: a.s.ID(), Type: "elicitation.requested", Data: data})
	if unattended {
		r, _ := a.settle(el, host.ElicitResult{Action: host.ElicitDecline}, "unattended")
		return r, nil
	}
	r, err := el.wait(ctx, tool.DefaultApprovalTimeout)
	switch {
	case err == nil:
	case errors.Is(err, errExpired):
		r, _ = a.settle(el, host.ElicitResult{Action: host.ElicitDecline}, "timeout")
	default:
		r, _ = a.settle(el, host.ElicitResult{Action: host.ElicitCancel}, "cancel")
	}
	return r, nil
}

// settle records an elicitation's answer once, as elicitation.resolved.
// It returns the answer that stands and whether it is r.
func (a *attached) settle(el *elicitation, r host.ElicitResult, by string) (host.ElicitResult, bool) {
	r, given := el.pending.settle(&a.mu, r, by, func() { el.Action = r.Action })
	if given {
		a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Type: "elicitation.resolved",
			Data: mustJSON(map[string]string{"elicitation_id": el.ID, "action": r.Action, "by": by})})
	}
	return r, given
}

func (srv *Server) listElicitations(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": listOpen(&a.mu, a.elicitations)})
}

func (srv *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	var body struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	switch body.Action {
	case host.ElicitAccept, host.ElicitDecline, host.ElicitCancel:
	default:
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "action-invalid", Title: "Unknown action",
			Detail: "action is one of accept, decline, cancel"})
		return
	}
	a.mu.Lock()
	el := a.elicitations[r.PathValue("eid")]
	a.mu.Unlock()
	if el == nil {
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "elicitation-unknown", Title: "No such elicitation"})
		return
	}
	_, given := a.settle(el, host.ElicitResult{Action: body.Action, Content: body.Content}, "client")
	a.mu.Lock()
	by, action := el.By, el.Action
	a.mu.Unlock()
	if !given {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "elicitation-resolved", Title: "The elicitation was already answered",
			Detail: "answered " + action + " by " + by})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"elicitation_id": el.ID, "action": action, "by": by})
}
