package httpapi

import (
	"errors"
	"net/http"
	"strconv"
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
	// OutputTail is the end of the task's output, with ?tail=.
	OutputTail *string `json:"output_tail,omitempty"`
	OutputSize *int64  `json:"output_size,omitempty"`
}

// maxTail bounds ?tail=, the bytes of each task's output a list carries.
const maxTail = 16 << 10

type outcome struct {
	ExitCode   *int   `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// listTasks lists the background tasks of the sessions this host holds,
// outcome included; ?session= and ?state= narrow it, ?tail=N adds the
// last N bytes of each one's output (at most maxTail).
func (srv *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail := 0
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "tail-invalid", Title: "tail is a number of bytes"})
			return
		}
		tail = min(n, maxTail)
	}
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
			if tail > 0 {
				// An output that cannot be read is shown as none.
				text, size, err := s.TaskTail(t.ID, tail)
				if err != nil {
					srv.log.Warn("read task output", "session_id", s.ID(), "task", t.ID, "err", err)
				}
				v.OutputTail, v.OutputSize = &text, &size
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

// stopTask kills a running background task and answers it as ended:
// 404 for a task the session does not have, 409 for one that had ended.
func (srv *Server) stopTask(w http.ResponseWriter, r *http.Request) {
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	t, err := a.s.StopTask(r.PathValue("tid"))
	switch {
	case errors.Is(err, host.ErrNoTask):
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "task-unknown", Title: "No such task"})
	case errors.Is(err, host.ErrTaskEnded):
		writeProblem(w, problem{Status: http.StatusConflict, Code: "task-ended", Title: "The task had ended", Detail: t.Outcome()})
	case err != nil:
		srv.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, taskViewOf(a.s.ID(), t, srv.opts.Now()))
	}
}
