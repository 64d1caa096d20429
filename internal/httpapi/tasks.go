package httpapi

import (
	"net/http"
	"time"

	"meka.dev/meka/internal/host"
)

type taskView struct {
	ID        string     `json:"id"`
	SessionID string     `json:"session_id"`
	Label     string     `json:"label"`
	Command   string     `json:"command"`
	State     string     `json:"state"` // running, exited or reported
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	Outcome   *outcome   `json:"outcome"`
}

type outcome struct {
	ExitCode   *int   `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// listTasks lists the background tasks of the sessions this host holds,
// outcome included; ?session= and ?state= narrow it.
func (srv *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	items := []taskView{}
	now := srv.opts.Now()
	for _, s := range srv.opts.Host.Sessions() {
		if id := q.Get("session"); id != "" && id != s.ID() {
			continue
		}
		for _, t := range s.Tasks() {
			v := taskViewOf(s.ID(), t, now)
			if st := q.Get("state"); st != "" && st != v.State {
				continue
			}
			items = append(items, v)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": nil})
}

// taskViewOf is a task as the API shows it, outcome included.
func taskViewOf(sessionID string, t host.Task, now time.Time) taskView {
	v := taskView{ID: t.ID, SessionID: sessionID, Label: t.Label, Command: t.Command, State: "running", StartedAt: t.Started.UTC()}
	if t.Exited() {
		v.State = "exited"
		if t.Reported {
			v.State = "reported"
		}
		end := t.Ended.UTC()
		v.EndedAt = &end
		o := &outcome{Signal: t.Signal, Reason: t.Reason, DurationMS: t.Duration(now).Milliseconds()}
		if t.ExitCode >= 0 {
			code := t.ExitCode
			o.ExitCode = &code
		}
		v.Outcome = o
	}
	return v
}
