package httpapi

import (
	"context"
	"encoding/json"
	"errors"

	"meka.dev/meka/internal/events"
	"meka.dev/meka/session"
)

// finishInterrupted records the end of the turns a stopped process left
// unfinished in the feed, as soon as this server starts: a turn.completed,
// status interrupted, so a client waiting on the turn or replaying the
// feed sees it end, and GET of the turn answers how it ended. The session
// is opened to tell a dead turn from one running: a session another live
// process holds is left to it. Opening also closes, in the session's log,
// the calls the turn left without a result (the host's recovery), before
// the turn's end is recorded.
func (srv *Server) finishInterrupted(ctx context.Context) {
	evs, err := srv.opts.Feed.Unfinished(ctx)
	if err != nil {
		srv.log.Warn("find the turns a stopped process left unfinished", "err", err)
		return
	}
	for _, e := range evs {
		if ctx.Err() != nil {
			return
		}
		if srv.running(e.SessionID) {
			continue
		}
		_, err := srv.opts.Host.Open(ctx, e.SessionID)
		switch {
		case errors.Is(err, session.ErrHeld):
			continue // its holder's turn, perhaps still running
		case err != nil && !errors.Is(err, session.ErrNotFound):
			srv.log.Warn("open a session to finish its interrupted turn", "session_id", e.SessionID, "err", err)
			continue
		}
		var started struct {
			ID     string `json:"turn_id"`
			Source string `json:"source"`
		}
		if json.Unmarshal(e.Data, &started) != nil || started.ID == "" {
			continue
		}
		t := events.Turn{ID: started.ID, SessionID: e.SessionID, Source: started.Source, StartedAt: e.Time.UTC(), FirstEventID: e.ID}
		t.Interrupt(srv.opts.Now())
		srv.record(ctx, Entry{SessionID: e.SessionID, Turn: e.Turn, Type: events.TurnCompleted, Data: mustJSON(t)})
		srv.log.Info("recorded the end of a turn a stopped process left", "session_id", e.SessionID, "turn_id", t.ID)
	}
}

// running reports whether this server runs a turn of the session.
func (srv *Server) running(id string) bool {
	srv.mu.Lock()
	a := srv.sessions[id]
	srv.mu.Unlock()
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.current != nil || a.next != nil
}
