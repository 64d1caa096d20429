package acp

import (
	"context"
	"encoding/json"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
)

// This file serves the sessions session/new answered before their
// engines were built (host.Start): the answer needs only the stored
// session, and every later request naming the session waits for the
// build, and fails with its error when it failed.

// building is a session whose engine is being built.
type building struct {
	id       string
	answered chan struct{} // closed once the session/new response is on the wire
	settled  chan struct{} // closed once the session is registered and announced, or err is set
	err      error
}

// build tracks a session host.Start began for the session/new request
// of ctx: once it has been answered and the engine built, the session is
// registered and announced (its palette, notices and dropped MCP
// servers) as a created one always was, after the response and before
// anything else of it.
func (s *server) build(ctx context.Context, p *host.Pending, droppedMCP int) {
	b := &building{id: p.Meta().ID, answered: make(chan struct{}), settled: make(chan struct{})}
	s.mu.Lock()
	s.building[b.id] = b
	s.mu.Unlock()
	jsonrpc.AfterResponse(ctx, func() {
		p.Build()
		close(b.answered)
	})
	go func() {
		defer close(b.settled)
		<-b.answered
		hs, err := p.Wait(context.Background())
		if err != nil {
			b.err = s.sessionError("create session", b.id, err)
			return // kept until a request has been told
		}
		e := s.register(hs, true)
		s.mu.Lock()
		delete(s.building, b.id)
		s.mu.Unlock()
		e.announce(s.base, false)
		e.dropped(s.base, droppedMCP)
	}()
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

// awaitBuilds waits for every build, at the connection's end.
func (s *server) awaitBuilds() {
	s.mu.Lock()
	all := make([]*building, 0, len(s.building))
	for _, b := range s.building {
		all = append(all, b)
	}
	s.mu.Unlock()
	for _, b := range all {
		<-b.settled
	}
}
