package acp

import (
	"sync"

	"meka.dev/meka/internal/acp/jsonrpc"
)

// A session/cancel sent straight after a session/prompt must stop that
// prompt even if it arrives before the prompt's handler has started, and
// a session/prompt sent straight after a cancel must not be stopped by it:
// the JSON-RPC layer serves requests on goroutines of their own and
// notifications on another, so all three race. The layer's arrival hooks
// close the race: they see each session/prompt and session/cancel as it
// is read, before the layer dispatches anything after it. A cancel then
// latches onto the prompts on their way, each prompt's handler finds its
// latch by request id, and a prompt knows whether a cancel of its session
// came before it on the wire (so it may queue behind the turn that cancel
// ends).

// maxArrivals bounds the prompts remembered; one whose handler never ran
// (its line was malformed) is forgotten eventually.
const maxArrivals = 1024

// arrivals are the prompts read and not yet started, by request id.
type arrivals struct {
	mu      sync.Mutex // guards the fields below
	pending map[string]*arrival
	order   []string
	// seq numbers prompts and cancels in the order they were read.
	seq uint64
	// cancels holds the position of each session's last cancel, for at
	// most maxArrivals sessions: a cancel names any session id the client
	// likes, and only a closed session's is forgotten otherwise.
	cancels map[string]uint64
}

type arrival struct {
	sessionID string
	ticket
}

// ticket is what a prompt's handler learns of its place on the wire.
type ticket struct {
	// seq is the prompt's position; zero when it was not recorded.
	seq uint64
	// cancelAt is the position of the last cancel of its session read
	// before it, zero for none.
	cancelAt uint64
	// latched is set when a cancel read after it applies to it.
	latched bool
}

// cancelsTurn reports whether the prompt holding t came after a cancel
// that ends the turn started by the prompt at position inFlight.
func (t ticket) cancelsTurn(inFlight uint64) bool { return t.cancelAt > inFlight }

func newArrivals() *arrivals {
	return &arrivals{pending: make(map[string]*arrival), cancels: make(map[string]uint64)}
}

func (a *arrivals) add(id, sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.pending[id]; !ok {
		a.order = append(a.order, id)
	}
	a.seq++
	a.pending[id] = &arrival{sessionID: sessionID, ticket: ticket{seq: a.seq, cancelAt: a.cancels[sessionID]}}
	for len(a.order) > maxArrivals {
		delete(a.pending, a.order[0])
		a.order = a.order[1:]
	}
}

// latch marks the session's prompts on their way as cancelled and records
// the cancel's position; it reports whether there was such a prompt.
func (a *arrivals) latch(sessionID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	a.cancels[sessionID] = a.seq
	if len(a.cancels) > maxArrivals {
		// Drop the oldest cancel: a prompt read before it is long gone.
		// Reached only past maxArrivals sessions cancelled and not closed.
		oldest, at := "", a.seq
		for id, c := range a.cancels {
			if c < at {
				oldest, at = id, c
			}
		}
		delete(a.cancels, oldest)
	}
	found := false
	for _, p := range a.pending {
		if p.sessionID == sessionID {
			p.latched, found = true, true
		}
	}
	return found
}

// take removes a prompt's record as its handler starts and returns its
// ticket.
func (a *arrivals) take(id string) ticket {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[id]
	if p == nil {
		return ticket{}
	}
	delete(a.pending, id)
	for i, o := range a.order {
		if o == id {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	return p.ticket
}

// cancelledSince reports whether a cancel of the session was read after
// the prompt at position seq.
func (a *arrivals) cancelledSince(sessionID string, seq uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return seq != 0 && a.cancels[sessionID] > seq
}

// forget drops what is remembered of a session's cancels once it is
// closed.
func (a *arrivals) forget(sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.cancels, sessionID)
}

// arrived is the JSON-RPC layer's Arrived hook: it records each
// session/prompt on the reader goroutine, before anything after it on the
// wire is dispatched.
func (a *arrivals) arrived(req *jsonrpc.Request) {
	if req.Method != "session/prompt" {
		return
	}
	// The prompt may be large: only its members are skipped over here, on
	// the reader goroutine; the handler decodes it.
	sid, ok := jsonrpc.StringMember(req.Params, "sessionId")
	if !ok || sid == "" {
		return // the handler answers the bad params
	}
	a.add(string(req.ID), sid)
}
