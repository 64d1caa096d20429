package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// idempotency is a stored answer to a write sent with Idempotency-Key.
type idempotency struct {
	sum    [32]byte // of method, path and body
	done   chan struct{}
	status int
	body   []byte
	header http.Header
	at     time.Time
}

// idempotencyTTL is how long a key's answer is kept.
const idempotencyTTL = 24 * time.Hour

// idempotent runs h once per Idempotency-Key: a retry gets the stored
// answer, marked Idempotent-Replayed; a retry while the first is in flight
// gets 409; the key reused with another request gets 422.
func (srv *Server) idempotent(w http.ResponseWriter, r *http.Request, h func(w http.ResponseWriter, r *http.Request)) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		h(w, r)
		return
	}
	body, ok := srv.readBody(w, r)
	if !ok {
		return
	}
	sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.Path+"\n"), body...))
	now := srv.opts.Now()
	srv.mu.Lock()
	for k, e := range srv.idem {
		if now.Sub(e.at) > idempotencyTTL {
			delete(srv.idem, k)
		}
	}
	e, seen := srv.idem[key]
	if !seen {
		e = &idempotency{sum: sum, done: make(chan struct{}), at: now}
		srv.idem[key] = e
	}
	srv.mu.Unlock()
	if seen {
		select {
		case <-e.done:
		default:
			writeProblem(w, problem{Status: http.StatusConflict, Code: "idempotency-in-flight", Title: "A request with this Idempotency-Key is in flight"})
			return
		}
		if e.sum != sum {
			writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "idempotency-key-reused", Title: "The Idempotency-Key was used for another request"})
			return
		}
		for k, v := range e.header {
			w.Header()[k] = v
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(e.status)
		w.Write(e.body)
		return
	}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h(rec, r)
	srv.mu.Lock()
	e.status, e.body, e.header = rec.status, rec.buf.Bytes(), w.Header().Clone()
	if rec.status >= 500 {
		delete(srv.idem, key) // a fault of meka's: the retry runs again
	}
	srv.mu.Unlock()
	close(e.done)
}

type recorder struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (r *recorder) WriteHeader(s int) { r.status = s; r.ResponseWriter.WriteHeader(s) }
func (r *recorder) Write(b []byte) (int, error) {
	r.buf.Write(b)
	return r.ResponseWriter.Write(b)
}

type inputBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	URI  string `json:"uri,omitempty"`
}

func parts(in []inputBlock) (model.Parts, bool) {
	var ps model.Parts
	for _, b := range in {
		switch b.Type {
		case "text":
			ps = append(ps, model.Text{Text: b.Text})
		case "resource_link":
			ps = append(ps, model.Resource{URI: b.URI})
		default:
			return nil, false
		}
	}
	return ps, len(ps) > 0
}

func (srv *Server) startTurn(w http.ResponseWriter, r *http.Request) {
	srv.idempotent(w, r, srv.startTurnOnce)
}

func (srv *Server) startTurnOnce(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input []inputBlock `json:"input"`
		// Pin keeps the words verbatim through every compaction.
		Pin bool `json:"pin"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	ps, ok := parts(body.Input)
	if !ok {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "input-invalid", Title: "input needs at least one block",
			Detail: `blocks are {"type":"text","text":…} or {"type":"resource_link","uri":…}`})
		return
	}
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	t, err := a.start(session.UserMessage{Parts: ps, Pinned: body.Pin})
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	_, newest, _ := srv.opts.Feed.Bounds(r.Context())
	w.Header().Set("Location", "/v1/sessions/"+a.s.ID()+"/turns/"+t.ID)
	writeJSON(w, http.StatusAccepted, map[string]any{"turn_id": t.ID, "status": "running", "after_event_id": newest})
}

// start runs msg as a turn of its own, in the background: the turn
// belongs to the server, not to the request that asked for it.
func (a *attached) start(msg session.UserMessage) (*turnInfo, error) {
	a.mu.Lock()
	if a.current != nil || a.next != nil || a.s.Busy() {
		a.mu.Unlock()
		return nil, agent.ErrBusy
	}
	t := &turnInfo{Turn: events.Turn{ID: uuid.Must(uuid.NewV7()).String(), SessionID: a.s.ID(), Source: "client", Status: "running",
		StartedAt: a.srv.opts.Now().UTC()}, done: make(chan struct{}), own: true}
	// The turn's own context latches a cancel that lands before the
	// engine has begun it.
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	pruneDone(a.turns, func(t *turnInfo) bool { return t.EndedAt != nil })
	a.turns[t.ID] = t
	a.next = t
	a.mu.Unlock()
	go func() {
		defer cancel()
		res, err := a.s.Run(ctx, msg)
		a.mu.Lock()
		began := a.next != t
		if !began {
			a.next = nil
		}
		a.mu.Unlock()
		if !began {
			// The engine never started it: another turn (a job, a report)
			// won the session first, or the session closed.
			res = agent.Result{Stop: agent.StopFailed, Err: err}
			if errors.Is(err, agent.ErrBusy) {
				res.Err = errBusyTurn
			}
		}
		a.finish(t, res)
	}()
	return t, nil
}

// turn finds a turn: one of a session this server has attached, else
// one that ended as the feed records it (before a restart, or in another
// process), which is answered as it ended.
func (srv *Server) turn(w http.ResponseWriter, r *http.Request) (*attached, *turnInfo, bool) {
	srv.mu.Lock()
	a := srv.sessions[r.PathValue("id")]
	srv.mu.Unlock()
	var t *turnInfo
	if a != nil {
		a.mu.Lock()
		t = a.turns[r.PathValue("tid")]
		a.mu.Unlock()
	}
	if t == nil {
		if t = srv.storedTurn(r.Context(), r.PathValue("id"), r.PathValue("tid")); t != nil {
			return &attached{srv: srv}, t, true
		}
		writeProblem(w, problem{Status: http.StatusNotFound, Code: "turn-unknown", Title: "No such turn"})
		return nil, nil, false
	}
	return a, t, true
}

// storedTurn is a turn that ended as the feed's turn.completed records
// it, nil when the feed has no end of it.
func (srv *Server) storedTurn(ctx context.Context, sessionID, turnID string) *turnInfo {
	evs, err := srv.opts.Feed.TurnEvents(ctx, sessionID, turnID)
	if err != nil {
		srv.log.Warn("read a turn from the feed", "session_id", sessionID, "turn_id", turnID, "err", err)
		return nil
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Type != events.TurnCompleted {
			continue
		}
		t := &turnInfo{number: e.Turn, done: make(chan struct{})}
		if json.Unmarshal(e.Data, &t.Turn) != nil || t.ID != turnID {
			return nil
		}
		t.LastEventID = e.ID
		close(t.done)
		return t
	}
	return nil
}

func (srv *Server) getTurn(w http.ResponseWriter, r *http.Request) {
	a, t, ok := srv.turn(w, r)
	if !ok {
		return
	}
	if wait, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && wait > 0 {
		timer := time.NewTimer(min(wait, 300*time.Second))
		select {
		case <-t.done:
		case <-timer.C:
		case <-r.Context().Done():
		}
		timer.Stop()
	}
	a.mu.Lock()
	view := *t
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, view)
}

// cancelTurn cancels a turn: the session's latch holds a cancel that
// lands before the engine starts the turn, and pending approvals resolve
// as denied by the cancel.
func (srv *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	a, t, ok := srv.turn(w, r)
	if !ok {
		return
	}
	select {
	case <-t.done:
		a.mu.Lock()
		view := *t
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, view)
		return
	default:
	}
	if t.cancel != nil {
		t.cancel()
	} else {
		a.s.Cancel()
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"turn_id": t.ID, "status": "cancelling"})
}

// inbox steers a running turn: the text rides the next tool round's
// results or the nudge.
func (srv *Server) inbox(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text        string `json:"text"`
		StartIfIdle bool   `json:"start_if_idle"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	if body.Text == "" {
		writeProblem(w, problem{Status: http.StatusUnprocessableEntity, Code: "input-invalid", Title: "text is empty"})
		return
	}
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	if a.s.Steer(model.Text{Text: body.Text}) {
		a.mu.Lock()
		tid := ""
		if a.current != nil {
			tid = a.current.ID
		}
		a.mu.Unlock()
		writeJSON(w, http.StatusAccepted, map[string]string{"inbox_id": id, "turn_id": tid, "delivery": "queued"})
		return
	}
	if !body.StartIfIdle {
		writeProblem(w, problem{Status: http.StatusConflict, Code: "no-turn-in-flight", Title: "No turn is running to steer",
			Detail: "start a turn with POST /v1/sessions/{id}/turns, or send start_if_idle"})
		return
	}
	t, err := a.start(session.UserMessage{Parts: model.Parts{model.Text{Text: body.Text}}})
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"inbox_id": id, "turn_id": t.ID, "delivery": "started"})
}

var errBusyTurn = errors.New("another turn took the session first")

// turnProblem is a failed turn's error as clients may see it: the
// provider's text only when relaying is on, capped.
func (srv *Server) turnProblem(err error) problem {
	srv.log.Info("turn failed", "err", err)
	return events.TurnProblem(err, srv.opts.RelayProviderErrors)
}

// compact summarizes the session's older turns now, as /compact does: it
// answers once the compaction landed (context.compacted on the feed) or
// failed.
func (srv *Server) compact(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Focus string `json:"focus"`
	}
	if !srv.decode(w, r, &body) {
		return
	}
	a, ok := srv.held(w, r)
	if !ok {
		return
	}
	a.mu.Lock()
	busy := a.current != nil || a.next != nil
	a.mu.Unlock()
	if busy {
		srv.fail(w, r, agent.ErrBusy)
		return
	}
	switch err := a.s.CompactFocus(r.Context(), body.Focus); {
	case errors.Is(err, agent.ErrNothingToCompact):
		writeProblem(w, problem{Status: http.StatusConflict, Code: "nothing-to-compact", Title: "Nothing to compact", Detail: err.Error()})
	case err != nil && errors.Is(err, agent.ErrBusy):
		srv.fail(w, r, err)
	case err != nil:
		writeProblem(w, problem{Status: http.StatusBadGateway, Code: "compaction-failed", Title: "The compaction failed; the conversation is unchanged", Where: "meka log"})
		srv.log.Warn("compaction failed", "session_id", a.s.ID(), "err", err)
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "completed"})
	}
}
