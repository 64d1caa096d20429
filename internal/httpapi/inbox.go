package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// The requests waiting on a person, across every session this server
// holds: what a phone's inbox lists and answers in one tap. Answers go to
// each session's own approvals/{aid} and elicitations/{eid}.

// sessionApproval and sessionElicitation are open requests named with
// their session.
type sessionApproval struct {
	SessionID string `json:"session_id"`
	approval
}

type sessionElicitation struct {
	SessionID string `json:"session_id"`
	elicitation
}

// attachedSessions is a snapshot of the sessions this server attached to.
func (srv *Server) attachedSessions() []*attached {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	out := make([]*attached, 0, len(srv.sessions))
	for _, a := range srv.sessions {
		out = append(out, a)
	}
	return out
}

// allApprovals lists the open approvals of every session held here,
// oldest first (ids are UUIDv7).
func (srv *Server) allApprovals(w http.ResponseWriter, r *http.Request) {
	items := []sessionApproval{}
	for _, a := range srv.attachedSessions() {
		for _, ap := range listOpen(&a.mu, a.approvals) {
			items = append(items, sessionApproval{SessionID: a.s.ID(), approval: ap})
		}
	}
	slices.SortFunc(items, func(x, y sessionApproval) int { return strings.Compare(x.ID, y.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// allElicitations lists the open elicitations of every session held
// here, oldest first.
func (srv *Server) allElicitations(w http.ResponseWriter, r *http.Request) {
	items := []sessionElicitation{}
	for _, a := range srv.attachedSessions() {
		for _, el := range listOpen(&a.mu, a.elicitations) {
			items = append(items, sessionElicitation{SessionID: a.s.ID(), elicitation: el})
		}
	}
	slices.SortFunc(items, func(x, y sessionElicitation) int { return strings.Compare(x.ID, y.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}
