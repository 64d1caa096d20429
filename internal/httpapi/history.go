package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
)

// History limits: a page of a session's durable events, in one response.
const (
	defaultHistoryLimit = 5000
	maxHistoryLimit     = 10000
)

// history answers a session's durable feed events in one JSON response,
// the envelopes the stream carries, oldest first, with last_id: where
// the stream picks up (?after= or Last-Event-ID). A page draws a long
// transcript from this instead of replaying it event by event over SSE.
//
// Forwards, ?after= pages from the start (next_cursor). Backwards,
// ?tail=N is the session's last N events and ?before=ID&limit=N the N
// before an earlier page (prev_cursor, null at the session's first
// event): a page draws its last screen without reading the rest first.
//
// last_id is at least the feed's newest id when the page is the last:
// the bounds are read first, and ids are committed in order, so every
// event of the session up to it is in this page or those before it.
func (srv *Server) history(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if q.Has("tail") || q.Has("before") {
		srv.historyBack(w, r, m.ID, q)
		return
	}
	after := int64(0)
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "The event id is not a number"})
			return
		}
		after = n
	}
	limit := historyLimit(q)
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
	next := int64(0)
	if more {
		next = last
	}
	srv.writeHistory(w, evs, last, next, -1)
}

// historyBack answers ?tail=N or ?before=ID&limit=N: the newest events
// below the cursor (past the feed's newest for a tail). last_id is the
// cursor less one, as the session has nothing else below it that this
// page and the ones before it leave out.
func (srv *Server) historyBack(w http.ResponseWriter, r *http.Request, sessionID string, q url.Values) {
	if q.Has("after") || q.Has("tail") && q.Has("before") {
		writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "Use one of after, before and tail",
			Detail: "after pages forwards, before pages back from an event id, tail reads the last events"})
		return
	}
	var before int64
	var limit int
	if q.Has("tail") {
		n, err := strconv.Atoi(q.Get("tail"))
		if err != nil || n < 1 || n > maxHistoryLimit {
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "tail is a number of events",
				Detail: "tail takes 1 to " + strconv.Itoa(maxHistoryLimit)})
			return
		}
		_, newest, err := srv.opts.Feed.Bounds(r.Context())
		if err != nil {
			srv.fail(w, r, err)
			return
		}
		before, limit = newest+1, n
	} else {
		n, err := strconv.ParseInt(q.Get("before"), 10, 64)
		if err != nil || n < 1 {
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "The event id is not a number",
				Detail: "before takes a prev_cursor from an earlier page"})
			return
		}
		before = n
		limit = historyLimit(q)
	}
	evs, err := srv.opts.Feed.Before(r.Context(), before, sessionID, limit+1)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	prev := int64(0)
	if len(evs) > limit {
		evs = evs[1:]
		prev = evs[0].ID
	}
	srv.writeHistory(w, evs, before-1, 0, prev)
}

// writeHistory writes a page; a zero cursor is null, and a negative
// prev leaves prev_cursor out (a forward page).
func (srv *Server) writeHistory(w http.ResponseWriter, evs []Event, last, next, prev int64) {
	// Written by hand: the envelopes are already JSON (Frame.AppendJSON).
	b := make([]byte, 0, 256*len(evs)+96)
	b = append(b, `{"items":[`...)
	for i, e := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = srv.outgoing(e).AppendJSON(b)
	}
	b = append(b, `],"last_id":"`...)
	b = strconv.AppendInt(b, last, 10)
	b = append(b, '"')
	b = appendCursor(append(b, `,"next_cursor":`...), next)
	if prev >= 0 {
		b = appendCursor(append(b, `,"prev_cursor":`...), prev)
	}
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// appendCursor appends an event id as a JSON string, or null for 0.
func appendCursor(b []byte, id int64) []byte {
	if id == 0 {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	return append(b, '"')
}

// historyLimit is a page's ?limit=, the default when it is missing or
// out of range.
func historyLimit(q url.Values) int {
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit <= 0 || limit > maxHistoryLimit {
		return defaultHistoryLimit
	}
	return limit
}
