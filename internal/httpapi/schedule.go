package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

type jobView struct {
	ID            string          `json:"id"`
	SessionID     string          `json:"session_id"`
	Schedule      map[string]any  `json:"schedule"`
	Prompt        string          `json:"prompt"`
	Gate          json.RawMessage `json:"gate"`
	AuthoredLevel string          `json:"authored_level"`
	CreatedAt     time.Time       `json:"created_at"`
	NextFireAt    time.Time       `json:"next_fire_at"`
	NextFireLocal string          `json:"next_fire_local"`
	LastFiredAt   *time.Time      `json:"last_fired_at"`
	Parked        *parked         `json:"parked"`
	Withheld      string          `json:"withheld,omitempty"`
}

type parked struct {
	Reason       string `json:"reason"`
	FailedClaims int    `json:"failed_claims"`
}

func (srv *Server) jobView(r *http.Request, j schedule.Job) jobView {
	v := jobView{ID: j.ID, SessionID: j.SessionID, Prompt: j.Prompt, AuthoredLevel: j.Level,
		CreatedAt: j.CreatedAt.UTC(), NextFireAt: j.NextAt.UTC(), NextFireLocal: schedule.FormatTime(j.NextAt, j.Location()),
		Gate: json.RawMessage("null")}
	switch j.Kind {
	case schedule.KindOnce:
		v.Schedule = map[string]any{"at": j.NextAt.UTC(), "tz": j.Zone}
	case schedule.KindCron:
		v.Schedule = map[string]any{"cron": j.Spec, "tz": j.Zone}
	default:
		v.Schedule = map[string]any{"every": j.Spec, "tz": j.Zone}
	}
	if j.Gate != "" {
		v.Gate = json.RawMessage(j.Gate)
	}
	if !j.LastFiredAt.IsZero() {
		t := j.LastFiredAt.UTC()
		v.LastFiredAt = &t
	}
	if j.Held != "" {
		v.Parked = &parked{Reason: j.Held, FailedClaims: j.FailedClaims}
	}
	if srv.opts.Schedules != nil {
		v.Withheld = srv.opts.Schedules.NotFiring(j, srv.levelOf(r.Context(), j.SessionID, nil))
	}
	return v
}

// levelOf is the level session id holds now: the live session's when this
// host holds it, else its row's (m when the caller has read it), failing
// closed at none when that cannot be read.
func (srv *Server) levelOf(ctx context.Context, id string, m *session.Meta) permission.Level {
	if s, ok := srv.opts.Host.Get(id); ok {
		return s.Level()
	}
	if m == nil {
		got, err := srv.opts.Host.Store().Get(ctx, id)
		if err != nil {
			return permission.None
		}
		m = &got
	}
	l, err := permission.ParseLevel(m.Permission)
	if err != nil {
		return permission.None
	}
	return l
}

func (srv *Server) jobs(w http.ResponseWriter, r *http.Request, sessionID string) {
	if srv.opts.Schedules == nil {
		writeJSON(w, http.StatusOK, map[string]any{"items": []jobView{}, "next_cursor": nil})
		return
	}
	js, err := srv.opts.Schedules.Jobs(r.Context(), sessionID)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	items := make([]jobView, 0, len(js))
	for _, j := range js {
		items = append(items, srv.jobView(r, j))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": nil})
}

func (srv *Server) listSchedule(w http.ResponseWriter, r *http.Request) {
	srv.jobs(w, r, r.URL.Query().Get("session"))
}

func (srv *Server) sessionSchedule(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	srv.jobs(w, r, m.ID)
}

// createJob makes a job as schedule_create does, from its arguments.
func (srv *Server) createJob(w http.ResponseWriter, r *http.Request) {
	if srv.opts.Schedules == nil {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "scheduling-disabled", Title: "Scheduling is disabled",
			Detail: "[schedule] enabled = false in the config"})
		return
	}
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeProblem(w, problem{Status: http.StatusRequestEntityTooLarge, Code: "body-too-large", Title: "The request body is too large"})
		return
	}
	level := srv.levelOf(r.Context(), m.ID, &m)
	j, _, err := srv.opts.Schedules.Create(r.Context(), m.ID, m.Cwd, level, body)
	var refused *schedule.RefusedError
	switch {
	case errors.As(err, &refused) && level == permission.None:
		writeProblem(w, problem{Status: http.StatusForbidden, Code: "session-level-none", Title: "The session is at none", Detail: refused.Msg})
		return
	case errors.As(err, &refused):
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "schedule-invalid", Title: "The job was refused", Detail: refused.Msg})
		return
	case err != nil:
		srv.fail(w, r, err)
		return
	}
	v := srv.jobView(r, j)
	srv.record(r.Context(), Entry{SessionID: m.ID, Type: "schedule.created", Data: mustJSON(v)})
	w.Header().Set("Location", "/v1/schedule/"+j.ID)
	writeJSON(w, http.StatusCreated, v)
}

// deleteJob cancels a job whoever holds it; it works with scheduling
// disabled too, through the store.
func (srv *Server) deleteJob(w http.ResponseWriter, r *http.Request) {
	if srv.opts.Schedules == nil {
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "job-unknown", Title: "No such job"})
		return
	}
	id := r.PathValue("job")
	ok, err := srv.opts.Schedules.Delete(r.Context(), id)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	if !ok {
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "job-unknown", Title: "No such job"})
		return
	}
	srv.record(r.Context(), Entry{Type: "schedule.cancelled", Data: mustJSON(map[string]string{"job_id": id})})
	w.WriteHeader(http.StatusNoContent)
}

// ScheduleFired records what became of a due occurrence as a
// schedule.fired event (and so a webhook): completed, failed (with the
// provider's text only under relay_provider_errors) or dropped.
func (srv *Server) ScheduleFired(f schedule.Fired) {
	d := map[string]any{"job_id": f.JobID, "session_id": f.SessionID, "occurrence_at": f.OccurrenceAt.UTC(),
		"status": f.Status, "missed": f.Missed, "late_by_ms": f.LateBy.Milliseconds()}
	if f.Err != nil {
		p := srv.turnProblem(f.Err)
		d["error"] = p
	}
	srv.record(context.Background(), Entry{SessionID: f.SessionID, Type: "schedule.fired", Data: mustJSON(d)})
}
