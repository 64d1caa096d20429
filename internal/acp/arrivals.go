package acp

import (
	"sync"

	"meka.dev/meka/internal/acp/jsonrpc"
)

// A session/cancel sent straight after a session/prompt must stop that
// prompt even if it arrives before the prompt's handler has started: the
// JSON-RPC layer serves requests on goroutines of their own and
// notifications on another, so the two race. The layer's Arrived hook
// closes the race: it records each session/prompt as it is read, before
// the layer dispatches anything after it. A cancel then latches onto the
// prompts on their way, and each prompt's handler finds its latch by
// request id.

// maxArrivals bounds the prompts remembered; one whose handler never ran
// (its line was malformed) is forgotten eventually.
const maxArrivals = 1024

// arrivals are the prompts read and not yet started, by request id.
type arrivals struct {
	mu      sync.Mutex // guards the fields below
	pending map[string]*arrival
	order   []string
}

type arrival struct {
	sessionID string
	latched   bool
}

func newArrivals() *arrivals { return &arrivals{pending: make(map[string]*arrival)} }

func (a *arrivals) add(id, sessionID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.pending[id]; !ok {
		a.order = append(a.order, id)
	}
	a.pending[id] = &arrival{sessionID: sessionID}
	for len(a.order) > maxArrivals {
		delete(a.pending, a.order[0])
		a.order = a.order[1:]
	}
}

// latch marks the session's prompts on their way as cancelled; it
// reports whether there was one.
func (a *arrivals) latch(sessionID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	found := false
	for _, p := range a.pending {
		if p.sessionID == sessionID {
			p.latched, found = true, true
		}
	}
	return found
}

// take removes a prompt's record as its handler starts and reports
// whether a cancel latched onto it.
func (a *arrivals) take(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending[id]
	if p == nil {
		return false
	}
	delete(a.pending, id)
	for i, o := range a.order {
		if o == id {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
	return p.latched
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
