package httpapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"meka.dev/meka/internal/events"
)

// subscriber receives the ephemeral frames of one session, or of every
// session when session is empty.
type subscriber struct {
	session string
	ch      chan frame
}

// subBuffer bounds the ephemeral frames waiting for one client; a client
// that falls this far behind is cut off and resumes by id.
const subBuffer = 1024

// Caps on live event streams: each holds a goroutine, a connection and a
// frame buffer, so a client that opens them in a loop is refused (503)
// rather than let exhaust the server.
const (
	maxSessionStreams = 64  // on one session, /v1/events?session= included
	maxStreams        = 256 // in all
)

// errTooManyStreams is subscribe's refusal at a cap.
type errTooManyStreams struct{ session bool }

func (e errTooManyStreams) Error() string {
	if e.session {
		return fmt.Sprintf("this session has %d event streams open, the most it may have; close one (a tab) and try again", maxSessionStreams)
	}
	return fmt.Sprintf("the server has %d event streams open, the most it serves; close one (a tab) and try again", maxStreams)
}

// subscribe registers a stream, or refuses it at a cap.
func (srv *Server) subscribe(sessionID string) (*subscriber, error) {
	srv.subMu.Lock()
	defer srv.subMu.Unlock()
	switch {
	case len(srv.subs) >= maxStreams:
		return nil, errTooManyStreams{}
	case sessionID != "" && srv.subsOf[sessionID] >= maxSessionStreams:
		return nil, errTooManyStreams{session: true}
	}
	sub := &subscriber{session: sessionID, ch: make(chan frame, subBuffer)}
	srv.subs[sub] = struct{}{}
	if sessionID != "" {
		srv.subsOf[sessionID]++
	}
	return sub, nil
}

func (srv *Server) unsubscribe(sub *subscriber) {
	srv.subMu.Lock()
	srv.dropLocked(sub)
	srv.subMu.Unlock()
}

// dropLocked ends a subscription once, with subMu held.
func (srv *Server) dropLocked(sub *subscriber) {
	if _, ok := srv.subs[sub]; !ok {
		return
	}
	delete(srv.subs, sub)
	close(sub.ch)
	if sub.session != "" {
		if srv.subsOf[sub.session]--; srv.subsOf[sub.session] == 0 {
			delete(srv.subsOf, sub.session)
		}
	}
}

// broadcast sends an ephemeral frame (no id) to the session's
// subscribers; a subscriber whose buffer is full is cut off.
func (srv *Server) broadcast(sessionID, typ string, data any) {
	srv.subMu.Lock()
	defer srv.subMu.Unlock()
	if len(srv.subs) == 0 {
		return // every text chunk comes here: encode nothing for nobody
	}
	f := frame{Type: typ, Timestamp: srv.opts.Now().UTC(), SessionID: sessionID, Data: mustJSON(data)}
	for sub := range srv.subs {
		if sub.session != "" && sub.session != sessionID {
			continue
		}
		select {
		case sub.ch <- f:
		default:
			srv.dropLocked(sub)
		}
	}
}

func (srv *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.meta(w, r)
	if !ok {
		return
	}
	srv.stream(w, r, m.ID)
}

func (srv *Server) allEvents(w http.ResponseWriter, r *http.Request) {
	srv.stream(w, r, r.URL.Query().Get("session"))
}

// connKey is the context key of a request's connection (Serve sets it).
type connKey struct{}

// streamSendBuffer is an event stream's socket send buffer: frames are
// small and flushed one by one, so a larger one only holds more for a
// client that stopped reading.
const streamSendBuffer = 64 << 10

// pollInterval bounds how late a stream sees events another process
// committed; this process's commits wake it at once.
const pollInterval = time.Second

// stream serves the feed as server-sent events: durable events from the
// store, after the client's cursor (Last-Event-ID or ?after=), with their
// ids; ephemeral frames as they happen, without.
func (srv *Server) stream(w http.ResponseWriter, r *http.Request, sessionID string) {
	_, ok := w.(http.Flusher)
	if !ok {
		writeProblem(w, problem{Status: http.StatusNotAcceptable, Code: "streaming-unsupported", Title: "This connection cannot stream"})
		return
	}
	ctx := r.Context()
	oldest, newest, err := srv.opts.Feed.Bounds(ctx)
	if err != nil {
		srv.fail(w, r, err)
		return
	}
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		cursor = r.URL.Query().Get("after")
	}
	after := newest
	var reset *events.Reset
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		switch {
		case err != nil || n < 0:
			writeProblem(w, problem{Status: http.StatusBadRequest, Code: "cursor-invalid", Title: "The event id is not a number"})
			return
		case n > newest:
			reset = &events.Reset{Reason: "unknown", OldestID: oldest, LatestID: newest}
		case oldest > 0 && n < oldest-1:
			reset = &events.Reset{Reason: "expired", OldestID: oldest, LatestID: newest}
			after = oldest - 1
		default:
			after = n
		}
	}
	sub, err := srv.subscribe(sessionID) // before the replay: nothing falls between
	if err != nil {
		w.Header().Set("Retry-After", "30")
		writeProblem(w, problem{Status: http.StatusServiceUnavailable, Code: "too-many-streams", Title: "Too many event streams are open", Detail: err.Error()})
		return
	}
	srv.streams.Add(1)
	defer func() {
		srv.unsubscribe(sub)
		srv.streams.Add(-1) // after: a client that saw the count fall finds the place free
	}()

	// A stream's socket keeps a small send buffer: the kernel holds less
	// for a client that is gone, and the write that finds it comes sooner.
	if c, ok := r.Context().Value(connKey{}).(interface{ SetWriteBuffer(int) error }); ok {
		c.SetWriteBuffer(streamSendBuffer)
	}
	// And sent data unacknowledged for as long as a write may take ends
	// the connection: a vanished client acknowledges nothing.
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		setUserTimeout(c, srv.opts.WriteTimeout)
	}
	// Every write has a deadline: a client that vanished without a FIN,
	// or stopped reading, fills the socket's buffers, and the write that
	// then cannot finish ends the stream, its goroutine and connection.
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(srv.opts.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return true
	}
	flush := func() bool {
		if err := rc.SetWriteDeadline(time.Now().Add(srv.opts.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		return rc.Flush() == nil
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if !send([]byte("retry: 3000\n\n")) {
		return
	}
	if reset != nil && !send(appendFrame(nil, frame{Type: events.FeedReset, Timestamp: srv.opts.Now().UTC(), Data: mustJSON(reset)})) {
		return
	}
	if !flush() {
		return
	}

	keepalive := time.NewTicker(srv.opts.Heartbeat)
	defer keepalive.Stop()
	poll := time.NewTicker(pollInterval)
	defer poll.Stop()
	cache := &srv.cache
	if err := cache.prime(ctx); err != nil {
		return
	}
	var buf []byte
	for {
		changed := srv.opts.Feed.Changed()
		// A commit after the cache's last read and before changed was
		// taken closes no channel this stream waits on: read it now, or
		// it would wait for the next poll.
		if cache.update(ctx, false) != nil {
			return
		}
		// Catch up: from the store while behind what the cache holds (a
		// resume from long ago), then from memory.
		for {
			evs, cached := cache.since(after, sessionID)
			if !cached {
				if evs, err = srv.opts.Feed.After(ctx, after, sessionID, 500); err != nil {
					return
				}
				if len(evs) == 0 {
					// None of this stream's events up to where the cache
					// starts: continue from there.
					after = max(after, cache.floor())
					continue
				}
			}
			for _, e := range evs {
				buf = appendFrame(buf[:0], srv.outgoing(e))
				if !send(buf) {
					return
				}
				after = e.ID
			}
			if len(evs) > 0 && !flush() {
				return
			}
			if cached {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed: // read at the top
		case <-poll.C:
			if cache.update(ctx, true) != nil {
				return
			}
		case <-keepalive.C:
			if !send([]byte(": keepalive\n\n")) || !flush() {
				return
			}
		case f, open := <-sub.ch:
			if !open {
				return // too slow: the client resumes by id
			}
			buf = appendFrame(buf[:0], f)
			if !send(buf) || !flush() {
				return
			}
		}
	}
}

// appendFrame appends one SSE frame: its id, its type, and the frame's
// JSON (events.Frame.AppendJSON) as data.
func appendFrame(b []byte, f frame) []byte {
	if f.ID != "" {
		b = append(b, "id: "...)
		b = append(b, f.ID...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, f.Type...)
	b = append(b, "\ndata: "...)
	b = f.AppendJSON(b)
	return append(b, "\n\n"...)
}
