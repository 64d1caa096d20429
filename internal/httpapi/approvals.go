package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// approval is a request put to whoever drives the session over HTTP.
type approval struct {
	ID        string          `json:"approval_id"`
	TurnID    string          `json:"turn_id,omitempty"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Title     string          `json:"title"`
	Input     json.RawMessage `json:"input"`
	Options   []string        `json:"options"`
	ExpiresAt time.Time       `json:"expires_at"`
	SubAgent  string          `json:"subagent_session_id,omitempty"`
	Status    string          `json:"status"` // pending or resolved
	Decision  string          `json:"decision,omitempty"`
	By        string          `json:"by,omitempty"`
	Resolved  *time.Time      `json:"resolved_at,omitempty"`

	answer chan permission.Decision
}

var decisions = map[string]permission.Decision{
	"allow": permission.Allow, "allow_always": permission.AlwaysAllow,
	"deny": permission.Deny, "deny_always": permission.AlwaysDeny,
}

func decisionName(d permission.Decision) string {
	for n, v := range decisions {
		if v == d {
			return n
		}
	}
	return "deny"
}

// ask is the session's Asker: the request becomes an approval.requested
// event and a pending approval, answered over HTTP, denied when the turn
// ends, after tool.DefaultApprovalTimeout, or at once for a scheduled
// turn, which has nobody on the other end.
func (a *attached) ask(ctx context.Context, req permission.Request) (permission.Decision, error) {
	now := a.srv.opts.Now().UTC()
	ap := &approval{ID: uuid.Must(uuid.NewV7()).String(), CallID: req.CallID, Tool: req.Tool, Title: req.Title,
		Input: req.Arguments, Options: []string{"allow", "allow_always", "deny", "deny_always"},
		ExpiresAt: now.Add(tool.DefaultApprovalTimeout), Status: "pending", answer: make(chan permission.Decision, 1)}
	if req.SubAgent != "" {
		ap.SubAgent = req.SessionID
	}
	if len(ap.Input) == 0 {
		ap.Input = json.RawMessage("{}")
	}
	a.mu.Lock()
	unattended := a.current != nil && a.current.Source == "schedule"
	if a.current != nil {
		ap.TurnID = a.current.ID
	}
	pruneDone(a.approvals, func(ap *approval) bool { return ap.Status != "pending" })
	a.approvals[ap.ID] = ap
	a.mu.Unlock()
	a.srv.record(ctx, Entry{SessionID: a.s.ID(), Type: "approval.requested", Data: mustJSON(ap)})
	if unattended {
		return a.resolve(ap, permission.Deny, "unattended"), nil
	}
	timer := time.NewTimer(time.Until(ap.ExpiresAt))
	defer timer.Stop()
	select {
	case d := <-ap.answer:
		return d, nil
	case <-timer.C:
		return a.resolve(ap, permission.Deny, "timeout"), nil
	case <-ctx.Done():
		by := "cancel"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			by = "timeout"
		}
		return a.resolve(ap, permission.Deny, by), nil
	}
}

// resolve records an approval's answer once; a later answer finds it
// resolved. It returns the decision that stands.
func (a *attached) resolve(ap *approval, d permission.Decision, by string) permission.Decision {
	a.mu.Lock()
	if ap.Status != "pending" {
		d = decisions[ap.Decision]
		a.mu.Unlock()
		return d
	}
	now := a.srv.opts.Now().UTC()
	ap.Status, ap.Decision, ap.By, ap.Resolved = "resolved", decisionName(d), by, &now
	view := *ap
	a.mu.Unlock()
	ap.answer <- d
	a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Type: "approval.resolved",
		Data: mustJSON(map[string]any{"approval_id": view.ID, "decision": view.Decision, "by": by})})
	return d
}

func (srv *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	items := []approval{}
	for _, ap := range a.approvals {
		if ap.Status == "pending" {
			items = append(items, *ap)
		}
	}
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

func (srv *Server) answerApproval(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	var body struct {
		Decision string `json:"decision"`
	}
	if !decode(w, r, &body) {
		return
	}
	d, known := decisions[body.Decision]
	if !known {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "decision-invalid", Title: "Unknown decision",
			Detail: "decision is one of allow, allow_always, deny, deny_always"})
		return
	}
	a.mu.Lock()
	ap := a.approvals[r.PathValue("aid")]
	var resolved *approval
	if ap != nil && ap.Status != "pending" {
		v := *ap
		resolved = &v
	}
	a.mu.Unlock()
	switch {
	case ap == nil:
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "approval-unknown", Title: "No such approval"})
		return
	case resolved != nil:
		writeProblem(w, problem{Status: http.StatusConflict, Code: "approval-resolved", Title: "The approval was already answered",
			Detail: "answered " + resolved.Decision + " by " + resolved.By + " at " + resolved.Resolved.Format(time.RFC3339)})
		return
	}
	a.resolve(ap, d, "client")
	a.mu.Lock()
	v := *ap
	a.mu.Unlock()
	if v.By != "client" {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "approval-resolved", Title: "The approval was already answered",
			Detail: "answered " + v.Decision + " by " + v.By})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval_id": v.ID, "decision": v.Decision, "by": v.By, "resolved_at": v.Resolved})
}
