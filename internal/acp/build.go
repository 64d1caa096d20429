package acp

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
)

// This file serves the sessions session/new answered before they were
// stored and built: the answer needs only the session's admission, which
// needs neither the host nor its database (host.Admission), and every
// later request naming the session waits for its build, and fails with
// its error when it failed.

// building is a session answered and not yet built.
type building struct {
	id       string
	answered chan struct{} // closed once the session/new response is on the wire
	stored   chan struct{} // closed once the session is stored, or could not be
	settled  chan struct{} // closed once the session is registered and announced, or err is set
	err      error
}

// build stores, opens and builds a session admitted for the session/new
// request of ctx, once it has been answered and the host is open; the
// session is then registered and announced (its project picker when the
// answer could not list projects, its palette, notices and dropped MCP
// servers) after the response and before anything else of it.
func (s *server) build(ctx context.Context, a *host.Admitted, droppedMCP int, projectsLater bool) {
	b := &building{id: a.Meta().ID, answered: make(chan struct{}), stored: make(chan struct{}), settled: make(chan struct{})}
	s.mu.Lock()
	s.building[b.id] = b
	s.mu.Unlock()
	jsonrpc.AfterResponse(ctx, func() { close(b.answered) })
	go func() {
		defer close(b.settled)
		<-b.answered
		p, err := s.start(a)
		close(b.stored)
		if err != nil {
			b.err = err
			return // kept until a request has been told
		}
		hs, err := p.Wait(context.Background())
		if err != nil {
			b.err = s.sessionError("create session", b.id, err)
			return
		}
		e := s.register(hs, true)
		s.mu.Lock()
		delete(s.building, b.id)
		s.mu.Unlock()
		if projectsLater {
			if names := s.projects(); len(names) > 0 {
				s.notify(s.base, b.id, ConfigOptionUpdate{ConfigOptions: s.configOptions(pickedOf(hs), names)})
			}
		}
		e.announce(s.base, false)
		e.dropped(s.base, droppedMCP)
	}()
}

// start stores an admitted session and takes its lock once the host is
// open; the connection's end does not cancel it, so that a session
// answered is a session stored.
func (s *server) start(a *host.Admitted) (*host.Pending, error) {
	if err := s.awaitHost(context.Background()); err != nil {
		return nil, err
	}
	p, err := s.host.Start(context.WithoutCancel(s.base), a)
	if err != nil {
		return nil, s.sessionError("create session", a.Meta().ID, err)
	}
	return p, nil
}

// awaitBuild waits for the build of the session a request names, if one
// runs, and returns the build's error; a failed build is forgotten once a
// request has been told, the stored session left to be loaded again.
func (s *server) awaitBuild(ctx context.Context, params json.RawMessage) error {
	id, ok := jsonrpc.StringMember(params, "sessionId")
	if !ok {
		return nil
	}
	s.mu.Lock()
	b := s.building[id]
	s.mu.Unlock()
	if b == nil {
		return nil
	}
	select {
	case <-b.settled:
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.err != nil {
		s.mu.Lock()
		if s.building[id] == b {
			delete(s.building, id)
		}
		s.mu.Unlock()
	}
	return b.err
}

// awaitStored waits until every session session/new answered is stored,
// or failed to be, for a listing that must show them.
func (s *server) awaitStored(ctx context.Context) error {
	for _, b := range s.builds() {
		select {
		case <-b.stored:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// awaitBuilds waits for every build, at the connection's end.
func (s *server) awaitBuilds() {
	for _, b := range s.builds() {
		<-b.settled
	}
}

// builds are the sessions answered and not yet built, at this moment.
func (s *server) builds() []*building {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.building))
}
