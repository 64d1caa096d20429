package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/internal/host"
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
	pending[permission.Decision]
	Decision string     `json:"decision,omitempty"`
	Resolved *time.Time `json:"resolved_at,omitempty"`
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
		ExpiresAt: now.Add(tool.DefaultApprovalTimeout), pending: newPending[permission.Decision]()}
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
	data := mustJSON(ap) // before a client can see it and answer
	pruneDone(a.approvals, func(ap *approval) bool { return !ap.open() })
	a.approvals[ap.ID] = ap
	a.mu.Unlock()
	a.srv.record(ctx, Entry{SessionID: a.s.ID(), Type: "approval.requested", Data: data})
	if unattended {
		d, _ := a.resolve(ap, permission.Deny, "unattended")
		return d, nil
	}
	d, err := ap.wait(ctx, tool.DefaultApprovalTimeout)
	if err == nil {
		return d, nil
	}
	by := "cancel"
	if errors.Is(err, errExpired) || errors.Is(err, context.DeadlineExceeded) {
		by = "timeout"
	}
	d, _ = a.resolve(ap, permission.Deny, by)
	return d, nil
}

// resolve records an approval's answer once, as approval.resolved. It
// returns the decision that stands and whether it is d.
func (a *attached) resolve(ap *approval, d permission.Decision, by string) (permission.Decision, bool) {
	d, given := ap.settle(&a.mu, d, by, func() {
		now := a.srv.opts.Now().UTC()
		ap.Decision, ap.Resolved = decisionName(d), &now
	})
	if given {
		a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Type: "approval.resolved",
			Data: mustJSON(map[string]any{"approval_id": ap.ID, "decision": decisionName(d), "by": by})})
	}
	return d, given
}

func (srv *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": listOpen(&a.mu, a.approvals)})
}

// listHooks is /hooks: the hooks the session runs (it is opened to read
// them), and those of an untrusted workspace that it does not.
func (srv *Server) listHooks(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	items := srv.opts.Host.Hooks(a.s.ID())
	if items == nil {
		items = []host.HookInfo{}
	}
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
	if !srv.decode(w, r, &body) {
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
	a.mu.Unlock()
	if ap == nil {
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "approval-unknown", Title: "No such approval"})
		return
	}
	_, given := a.resolve(ap, d, "client")
	a.mu.Lock()
	v := *ap
	a.mu.Unlock()
	if !given {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "approval-resolved", Title: "The approval was already answered",
			Detail: "answered " + v.Decision + " by " + v.By + " at " + v.Resolved.Format(time.RFC3339)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval_id": v.ID, "decision": v.Decision, "by": v.By, "resolved_at": v.Resolved})
}
