package httpapi

import (
	"net/http"
	"strconv"
)

// History limits: a page of a session's durable events, in one response.
const (
	defaultHistoryLimit = 5000
	maxHistoryLimit     = 10000
)

// history answers a session's durable feed events after ?after= in one
// JSON response, the envelopes the stream carries, with last_id: where
// the stream picks up (?after= or Last-Event-ID). A page draws a long
// transcript from this instead of replaying it event by event over SSE.
//
// last_id is at least the feed's newest id when this page is the last:
// the bounds are read first, and ids are committed in order, so every
// event of the session up to it is in the page.
func (srv *Server) history(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	after := int64(0)
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "The event id is not a number"})
			return
		}
		after = n
	}
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > maxHistoryLimit {
		limit = defaultHistoryLimit
	}
	_, newest, err := srv.opts.Feed.Bounds(r.Context())
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	evs, err := srv.opts.Feed.After(r.Context(), after, m.ID, limit+1)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	more := len(evs) > limit
	if more {
		evs = evs[:limit]
	}
	last := after
	if len(evs) > 0 {
		last = evs[len(evs)-1].ID
	}
	if !more {
		last = max(last, newest)
	}
	// Written by hand: the envelopes are already JSON (Frame.AppendJSON).
	b := make([]byte, 0, 256*len(evs)+64)
	b = append(b, `{"items":[`...)
	for i, e := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = srv.outgoing(e).AppendJSON(b)
	}
	b = append(b, `],"last_id":"`...)
	b = strconv.AppendInt(b, last, 10)
	b = append(b, `","next_cursor":`...)
	if more {
		b = append(b, '"')
		b = strconv.AppendInt(b, last, 10)
		b = append(b, '"')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}
