package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

var errSubAgent = errors.New("the session is a sub-agent's")

func (srv *Server) knownProfile(name string) bool { return slices.Contains(srv.opts.Profiles, name) }

// readBody reads a request's body within Options.BodyTimeout, or
// answers why it could not: too large (413), too slow (408), cut (400).
func (srv *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	// The connection's deadline, not the request's context: a read
	// blocked on a client that sends nothing more only ends with it.
	_ = rc.SetReadDeadline(time.Now().Add(srv.opts.BodyTimeout))
	body, err := io.ReadAll(r.Body)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
		return body, true
	}
	// The rest of the body is not waited for: the connection closes.
	w.Header().Set("Connection", "close")
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeProblem(w, problem{Status: http.StatusRequestEntityTooLarge, Code: "body-too-large", Title: "The request body is too large"})
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeProblem(w, problem{Status: http.StatusRequestTimeout, Code: "body-timeout", Title: "The request body did not arrive in time",
			Detail: fmt.Sprintf("the whole body must arrive within %s", srv.opts.BodyTimeout)})
	default:
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "body-unreadable", Title: "The request body could not be read", Detail: err.Error()})
	}
	return nil, false
}

// decode reads a JSON body strictly (readBody): an unknown field is a 400
// naming it, and so is anything after the value.
func (srv *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, ok := srv.readBody(w, r)
	if !ok {
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, tail := dec.Token(); tail != io.EOF {
			err = errors.New("data after the JSON value: a body is one JSON value")
		}
	}
	if err != nil {
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "body-invalid", Title: "The request body is not what this endpoint takes", Detail: err.Error()})
		return false
	}
	return true
}

// fail writes the problem an error maps to; internal detail is logged,
// never sent.
func (srv *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, code, title := errStatus(err)
	p := problem{Status: status, Code: code, Title: title}
	var held *session.HeldError
	switch {
	case errors.As(err, &held):
		p.Detail = "held by meka " + held.Holder.String()
	case status == http.StatusInternalServerError:
		p.Where = "meka log"
		srv.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	case errors.Is(err, errSubAgent):
	default:
		p.Detail = err.Error()
	}
	writeProblem(w, p)
}

// record is a session as the API shows it.
type record struct {
	ID                    string          `json:"id"`
	Title                 string          `json:"title"`
	Cwd                   string          `json:"cwd"`
	AdditionalDirectories []string        `json:"additional_directories"`
	Profile               string          `json:"profile"`
	Project               *string         `json:"project"`
	Permission            string          `json:"permission"`
	Approvals             bool            `json:"approvals"`
	ParentID              *string         `json:"parent_id"`
	CreatedAt             string          `json:"created_at"`
	UpdatedAt             string          `json:"updated_at"`
	State                 recordState     `json:"state"`
	Checklist             []checklistItem `json:"checklist,omitempty"`
	// Progress counts the plan's items done, of all, on every session
	// that keeps one: from the live session when held here, else folded
	// from its log (host.StoredPlan keeps what it folded).
	Progress *progress `json:"checklist_progress,omitempty"`
	// Usage is what the session's model calls consumed, as the log
	// records it (absent when the server has no spend query).
	Usage *Usage `json:"usage,omitempty"`
}

type progress struct {
	Completed int `json:"completed"`
	Total     int `json:"total"`
}

type recordState struct {
	Held bool `json:"held"`
	// HeldElsewhere is set when another process holds the session (a
	// REPL, a one-shot meka, a host sharing the database): turns and
	// changes are refused with held-elsewhere until it lets go. Holder
	// says which.
	HeldElsewhere       bool        `json:"held_elsewhere"`
	Holder              *holderInfo `json:"holder,omitempty"`
	Status              string      `json:"status"` // idle or running
	TurnID              string      `json:"turn_id,omitempty"`
	PendingApprovals    int         `json:"pending_approvals"`
	PendingElicitations int         `json:"pending_elicitations"`
}

type holderInfo struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
}

type checklistItem struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	TaskID string `json:"task_id,omitempty"`
}

func (srv *Server) recordOf(m session.Meta) record {
	r := record{ID: m.ID, Title: m.Title, Cwd: m.Cwd, AdditionalDirectories: m.AdditionalDirs, Profile: m.Profile,
		Permission: m.Permission, Approvals: m.Approvals, CreatedAt: m.CreatedAt.UTC().Format(timeFormat),
		UpdatedAt: m.UpdatedAt.UTC().Format(timeFormat), State: recordState{Status: "idle"}}
	if r.AdditionalDirectories == nil {
		r.AdditionalDirectories = []string{}
	}
	if m.Project != "" {
		r.Project = &m.Project
	}
	if m.ParentID != "" {
		r.ParentID = &m.ParentID
	}
	if s, ok := srv.opts.Host.Get(m.ID); ok {
		live := s.Meta()
		r.Permission, r.Approvals, r.Profile, r.Title = s.Level().String(), s.Approvals(), live.Profile, live.Title
		r.State.Held = true
		srv.mu.Lock()
		a := srv.sessions[m.ID]
		srv.mu.Unlock()
		if a != nil {
			a.mu.Lock()
			if a.current != nil {
				r.State.Status, r.State.TurnID = "running", a.current.ID
			}
			for _, ap := range a.approvals {
				if ap.open() {
					r.State.PendingApprovals++
				}
			}
			for _, el := range a.elicitations {
				if el.open() {
					r.State.PendingElicitations++
				}
			}
			a.mu.Unlock()
		} else if s.Busy() {
			r.State.Status = "running"
		}
		if c, ok := s.Plan(); ok {
			r.Checklist = checklistOf(c)
			r.Progress = progressOf(c)
		}
	}
	return r
}

// checklistOf lists the items a plan still owes: the open ones and the
// deferred ones, with what they wait on.
func checklistOf(c plan.Changed) []checklistItem {
	out := []checklistItem{}
	for _, it := range c.Items {
		if it.Status.Open() || it.Status == plan.Deferred {
			out = append(out, checklistItem{ID: it.ID, Text: it.Text, Status: string(it.Status), Reason: it.Reason, TaskID: it.Task})
		}
	}
	return out
}

// progressOf counts a plan's items done, those folded away included;
// nil for a plan that never had an item.
func progressOf(c plan.Changed) *progress {
	if c.Total == 0 {
		return nil
	}
	return &progress{Completed: c.Completed, Total: c.Total}
}

// usageOf reads every session's usage, logging a failure: a record goes
// without usage rather than fail.
func (srv *Server) usageOf(r *http.Request) map[string]Usage {
	if srv.opts.Usage == nil {
		return nil
	}
	u, err := srv.opts.Usage(r.Context())
	if err != nil {
		srv.log.Error("read usage", "err", err)
		return nil
	}
	return u
}

// withUsage sets rec's usage from u: zero for a session with no model
// call yet.
func withUsage(rec *record, u map[string]Usage) {
	if u == nil {
		return
	}
	v := u[rec.ID]
	rec.Usage = &v
}

// heldElsewhere reads which of the sessions another process holds,
// logging a failure: records then go without it rather than fail.
func (srv *Server) heldElsewhere(r *http.Request, ms ...session.Meta) map[string]session.Holder {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	hs, err := srv.opts.Host.HeldElsewhere(r.Context(), ids)
	if err != nil {
		srv.log.Error("read session holders", "err", err)
		return nil
	}
	return hs
}

// withHolder marks rec held elsewhere when hs names its holder.
func withHolder(rec *record, hs map[string]session.Holder) {
	if h, ok := hs[rec.ID]; ok && !rec.State.Held {
		rec.State.HeldElsewhere = true
		rec.State.Holder = &holderInfo{PID: h.PID, Host: h.Host}
	}
}

// withStoredProgress sets the progress of a session not held here from
// its log, logging a failure: the record goes without it.
func (srv *Server) withStoredProgress(r *http.Request, rec *record, m session.Meta) {
	c, ok, err := srv.opts.Host.StoredPlan(r.Context(), m)
	if err != nil {
		srv.log.Error("read plan", "session_id", m.ID, "err", err)
		return
	}
	if ok {
		rec.Progress = progressOf(c)
	}
}

// fullRecord is the record GET /v1/sessions/{id} answers: its checklist
// is there whether or not this server holds the session, folded from the
// log when it does not, and empty rather than missing.
type fullRecord struct {
	record
	Checklist []checklistItem `json:"checklist"`
}

const timeFormat = "2006-01-02T15:04:05.000000Z07:00"

func (srv *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Cwd                   string   `json:"cwd"`
		AdditionalDirectories []string `json:"additional_directories"`
		Profile               string   `json:"profile"`
		Permission            string   `json:"permission"`
		Approvals             *bool    `json:"approvals"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	if !filepath.IsAbs(body.Cwd) {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "path-not-absolute", Title: "cwd must be an absolute path"})
		return
	}
	o := host.CreateOptions{Cwd: body.Cwd, AdditionalDirs: body.AdditionalDirectories, Profile: body.Profile}
	if body.Permission != "" {
		l, err := permission.ParseLevel(body.Permission)
		if err != nil {
			writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "level-unknown", Title: "Unknown permission level", Detail: err.Error()})
			return
		}
		o.Permission = &l
	}
	if _, err := host.Canonical(body.Cwd); err != nil {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "cwd-invalid", Title: "cwd must be an existing directory"})
		return
	}
	if body.Profile != "" && !srv.knownProfile(body.Profile) {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "profile-unknown", Title: "No such profile", Detail: "no profile is called " + strconv.Quote(body.Profile)})
		return
	}
	s, err := srv.opts.Host.Create(r.Context(), o)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	if body.Approvals != nil {
		if err := s.SetApprovals(r.Context(), *body.Approvals); err != nil {
			srv.fail(w, r, err)
			return
		}
	}
	srv.attach(s)
	rec := srv.recordOf(s.Meta())
	srv.record(r.Context(), Entry{SessionID: s.ID(), Type: "session.created", Data: mustJSON(rec)})
	w.Header().Set("Location", "/v1/sessions/"+s.ID())
	writeJSON(w, http.StatusCreated, rec)
}

func (srv *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	page, err := srv.opts.Host.Store().List(r.Context(), session.ListOptions{Cwd: q.Get("cwd"), Limit: limit, Cursor: q.Get("cursor"), Parent: q.Get("parent")})
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	items := make([]record, 0, len(page.Sessions))
	usage := srv.usageOf(r)
	elsewhere := srv.heldElsewhere(r, page.Sessions...)
	for _, m := range page.Sessions {
		rec := srv.recordOf(m)
		withUsage(&rec, usage)
		withHolder(&rec, elsewhere)
		if !rec.State.Held {
			srv.withStoredProgress(r, &rec, m)
		}
		items = append(items, rec)
	}
	var next *string
	if page.Next != "" {
		next = &page.Next
		w.Header().Set("Link", fmt.Sprintf(`</v1/sessions?cursor=%s&limit=%d>; rel="next"`, page.Next, limit))
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}

// meta reads the session a path names, by full id.
func (srv *Server) meta(w http.ResponseWriter, r *http.Request) (session.Meta, bool) {
	id := r.PathValue("id")
	m, err := srv.opts.Host.Store().Get(r.Context(), id)
	if err == nil && m.ID != id {
		err = session.ErrNotFound
	}
	if err != nil {
		srv.fail(w, r, err)
		return session.Meta{}, false
	}
	return m, true
}

// held opens the session a path names for writing.
func (srv *Server) held(w http.ResponseWriter, r *http.Request) (*attached, bool) {
	a, err := srv.open(r.Context(), r.PathValue("id"))
	if err != nil {
		srv.fail(w, r, err)
		return nil, false
	}
	a.s.Touch()
	return a, true
}

func (srv *Server) getSession(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	rec := fullRecord{record: srv.recordOf(m), Checklist: []checklistItem{}}
	withUsage(&rec.record, srv.usageOf(r))
	withHolder(&rec.record, srv.heldElsewhere(r, m))
	c, ok, err := srv.opts.Host.StoredPlan(r.Context(), m)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	if ok {
		rec.Checklist = checklistOf(c)
		rec.Progress = progressOf(c)
	}
	writeJSON(w, http.StatusOK, rec)
}

func (srv *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Profile    *string `json:"profile"`
		Permission *string `json:"permission"`
		Project    *string `json:"project"`
		Approvals  *bool   `json:"approvals"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	s := a.s
	if (body.Profile != nil || body.Project != nil) && s.Busy() {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "turn-in-flight", Title: "A turn is running in the session",
			Detail: "the profile and the project change between turns; nothing was written"})
		return
	}
	var level permission.Level
	if body.Permission != nil {
		l, err := permission.ParseLevel(*body.Permission)
		if err != nil {
			writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "level-unknown", Title: "Unknown permission level", Detail: err.Error()})
			return
		}
		level = l
	}
	if body.Profile != nil && !srv.knownProfile(*body.Profile) {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "profile-unknown", Title: "No such profile", Detail: "no profile is called " + strconv.Quote(*body.Profile)})
		return
	}
	if body.Project != nil && *body.Project != "" {
		names, err := srv.opts.Host.Projects(r.Context())
		if err != nil {
			srv.fail(w, r, err)
			return
		}
		if !slices.Contains(names, *body.Project) {
			writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "project-unknown", Title: "No such project",
				Detail: fmt.Sprintf("no project is called %q; meka projects add creates one", *body.Project)})
			return
		}
	}
	changed := map[string]any{}
	if body.Permission != nil {
		if err := s.SetLevel(r.Context(), level); err != nil {
			srv.fail(w, r, err)
			return
		}
		changed["permission"] = level.String()
	}
	if body.Approvals != nil {
		if err := s.SetApprovals(r.Context(), *body.Approvals); err != nil {
			srv.fail(w, r, err)
			return
		}
		changed["approvals"] = *body.Approvals
	}
	if body.Project != nil {
		if err := s.SetProject(r.Context(), *body.Project); err != nil {
			srv.fail(w, r, err)
			return
		}
		changed["project"] = *body.Project
	}
	if body.Profile != nil {
		if err := s.Update(r.Context(), func(m *session.Meta) { m.Profile = *body.Profile }); err != nil {
			srv.fail(w, r, err)
			return
		}
		changed["profile"] = *body.Profile
		if _, err := srv.opts.Host.Reopen(r.Context(), s.ID()); err != nil {
			srv.fail(w, r, err)
			return
		}
	}
	srv.record(r.Context(), Entry{SessionID: s.ID(), Type: "session.updated", Data: mustJSON(map[string]any{"changed": changed})})
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, srv.recordOf(m))
}

func (srv *Server) forkSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Turn *int64 `json:"turn"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	if m.ParentID != "" {
		srv.fail(w, r, errSubAgent)
		return
	}
	through := int64(-1)
	if body.Turn != nil {
		through = *body.Turn
	}
	s, err := srv.opts.Host.Fork(r.Context(), m.ID, through)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	srv.attach(s)
	rec := srv.recordOf(s.Meta())
	srv.record(r.Context(), Entry{SessionID: s.ID(), Type: "session.created", Data: mustJSON(rec)})
	w.Header().Set("Location", "/v1/sessions/"+s.ID())
	writeJSON(w, http.StatusCreated, rec)
}

func (srv *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	if _, held := srv.opts.Host.Get(m.ID); held {
		if err := srv.opts.Host.CloseSession(r.Context(), m.ID); err != nil {
			srv.fail(w, r, err)
			return
		}
		srv.detach(m.ID)
		srv.record(r.Context(), Entry{SessionID: m.ID, Type: "session.released", Data: mustJSON(map[string]string{"reason": "close"})})
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": m.ID, "state": "released"})
}

func (srv *Server) messages(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 200
	}
	rows, err := srv.opts.Host.Store().Rows(r.Context(), m.ID, after+1)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	var next *string
	if len(rows) > limit {
		rows = rows[:limit]
		n := strconv.FormatInt(rows[len(rows)-1].Seq, 10)
		next = &n
	}
	items := []map[string]any{}
	for _, row := range rows {
		for _, e := range events.FromRows(m.ID, []session.Row{row}) {
			f := srv.outgoing(Event{Entry: e, Time: row.Time})
			items = append(items, map[string]any{"row": row.Seq, "turn": row.Turn, "type": e.Type, "data": f.Data, "time": row.Time.UTC().Format(timeFormat)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}

// rewindSession takes a session back to after a turn: its files, its
// log, or both (host.Rewind). A session held here and idle is released
// first, as a close would; the next request takes it up again.
func (srv *Server) rewindSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Turn  *int64 `json:"turn"`
		Mode  string `json:"mode"`
		Force bool   `json:"force"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	o := host.RewindOptions{Force: body.Force}
	switch body.Mode {
	case "", "both":
		o.Code, o.Conversation = true, true
	case "code":
		o.Code = true
	case "conversation":
		o.Conversation = true
	default:
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "body-invalid", Title: "The request body is not what this endpoint takes",
			Detail: fmt.Sprintf("mode %q: it is one of both (the default), code and conversation", body.Mode)})
		return
	}
	if body.Turn == nil {
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "body-invalid", Title: "The request body is not what this endpoint takes",
			Detail: "turn is required: the last turn to keep"})
		return
	}
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	if m.ParentID != "" {
		srv.fail(w, r, errSubAgent)
		return
	}
	if s, held := srv.opts.Host.Get(m.ID); held {
		if s.Busy() {
			srv.fail(w, r, agent.ErrBusy)
			return
		}
		if err := srv.opts.Host.CloseSession(r.Context(), m.ID); err != nil {
			srv.fail(w, r, err)
			return
		}
		srv.detach(m.ID)
		srv.record(r.Context(), Entry{SessionID: m.ID, Type: "session.released", Data: mustJSON(map[string]string{"reason": "rewind"})})
	}
	res, err := srv.opts.Host.RewindSession(r.Context(), m.ID, *body.Turn, o)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	type file struct {
		Path string `json:"path"`
		Op   string `json:"op"`
	}
	out := struct {
		ID    string `json:"id"`
		Turn  int64  `json:"turn"`
		Files []file `json:"files"`
		Undo  *int64 `json:"undo"`
	}{ID: m.ID, Turn: *body.Turn, Files: []file{}}
	for _, f := range res.Files {
		out.Files = append(out.Files, file{Path: f.Path, Op: f.Op})
	}
	if res.Undo != 0 {
		out.Undo = &res.Undo
	}
	srv.record(r.Context(), Entry{SessionID: m.ID, Type: "session.rewound", Data: mustJSON(out)})
	writeJSON(w, http.StatusOK, out)
}
