package httpapi

import (
	"context"
	"encoding/json"
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
	Status    string          `json:"status"` // pending or resolved
	Action    string          `json:"action,omitempty"`
	By        string          `json:"by,omitempty"`

	answer chan host.ElicitResult
}

// elicit is the session's Elicitor: an elicitation.requested event and a
// pending elicitation, answered over HTTP; declined when the turn ends,
// after the approval timeout, or at once for a scheduled turn.
func (a *attached) elicit(ctx context.Context, e host.Elicitation) (host.ElicitResult, error) {
	el := &elicitation{ID: uuid.Must(uuid.NewV7()).String(), Server: e.Server, Mode: e.Mode, Message: e.Message,
		Schema: e.Schema, URL: e.URL, ExpiresAt: a.srv.opts.Now().UTC().Add(tool.DefaultApprovalTimeout),
		Status: "pending", answer: make(chan host.ElicitResult, 1)}
	a.mu.Lock()
	unattended := a.current != nil && a.current.Source == "schedule"
	if a.current != nil {
		el.TurnID = a.current.ID
	}
	if a.elicitations == nil {
		a.elicitations = make(map[string]*elicitation)
	}
	pruneDone(a.elicitations, func(el *elicitation) bool { return el.Status != "pending" })
	a.elicitations[el.ID] = el
	a.mu.Unlock()
	a.srv.record(ctx, Entry{SessionID: a.s.ID(), Type: "elicitation.requested", Data: mustJSON(el)})
	if unattended {
		return a.settle(el, host.ElicitResult{Action: host.ElicitDecline}, "unattended"), nil
	}
	timer := time.NewTimer(time.Until(el.ExpiresAt))
	defer timer.Stop()
	select {
	case r := <-el.answer:
		return r, nil
	case <-timer.C:
		return a.settle(el, host.ElicitResult{Action: host.ElicitDecline}, "timeout"), nil
	case <-ctx.Done():
		return a.settle(el, host.ElicitResult{Action: host.ElicitCancel}, "cancel"), nil
	}
}

// settle records an elicitation's answer once and returns the one that
// stands.
func (a *attached) settle(el *elicitation, r host.ElicitResult, by string) host.ElicitResult {
	a.mu.Lock()
	if el.Status != "pending" {
		a.mu.Unlock()
		return host.ElicitResult{Action: el.Action}
	}
	el.Status, el.Action, el.By = "resolved", r.Action, by
	a.mu.Unlock()
	el.answer <- r
	a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Type: "elicitation.resolved",
		Data: mustJSON(map[string]string{"elicitation_id": el.ID, "action": r.Action, "by": by})})
	return r
}

func (srv *Server) listElicitations(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	items := []elicitation{}
	for _, el := range a.elicitations {
		if el.Status == "pending" {
			items = append(items, *el)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
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
	if !decode(w, r, &body) {
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
	var done *elicitation
	if el != nil && el.Status != "pending" {
		v := *el
		done = &v
	}
	a.mu.Unlock()
	switch {
	case el == nil:
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "elicitation-unknown", Title: "No such elicitation"})
		return
	case done != nil:
		writeProblem(w, problem{Status: http.StatusConflict, Code: "elicitation-resolved", Title: "The elicitation was already answered",
			Detail: "answered " + done.Action + " by " + done.By})
		return
	}
	a.settle(el, host.ElicitResult{Action: body.Action, Content: body.Content}, "client")
	a.mu.Lock()
	by, action := el.By, el.Action
	a.mu.Unlock()
	if by != "client" {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "elicitation-resolved", Title: "The elicitation was already answered",
			Detail: "answered " + action + " by " + by})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"elicitation_id": el.ID, "action": action, "by": by})
}
