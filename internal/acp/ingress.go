package acp

import (
	"bytes"
	"io"
	"regexp"
	"sync"
)

// A session/cancel sent straight after a session/prompt must stop that
// prompt even if it arrives before the prompt's handler has started: the
// JSON-RPC layer serves requests on goroutines of their own and
// notifications on another, so the two race. The ingress reader closes
// the race: it watches the bytes on their way to the JSON-RPC layer and
// records each session/prompt as it is read, before the layer can
// dispatch anything after it. A cancel then latches onto the prompts on
// their way, and each prompt's handler finds its latch by request id.

// headBytes is how much of a line is kept to recognize a prompt: the
// method, id and sessionId precede the content in every client seen.
const headBytes = 4 << 10

var (
	promptMethod = regexp.MustCompile(`"method"\s*:\s*"session/prompt"`)
	sessionField = regexp.MustCompile(`"sessionId"\s*:\s*"((?:[^"\\]|\\.)*)"`)
	idField      = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)`)
)

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

// ingress is the reader the JSON-RPC layer reads from.
type ingress struct {
	r    io.Reader
	a    *arrivals
	head []byte // the current line's first headBytes
	full bool   // head is full: the rest of the line is skipped
}

func (in *ingress) Read(p []byte) (int, error) {
	n, err := in.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		if !in.full {
			room := headBytes - len(in.head)
			if len(seg) >= room {
				in.head = append(in.head, seg[:room]...)
				in.full = true
			} else {
				in.head = append(in.head, seg...)
			}
		}
		if i < 0 {
			break
		}
		in.line()
		b = b[i+1:]
	}
	return n, err
}

// line looks at a finished line's head.
func (in *ingress) line() {
	head := in.head
	in.head, in.full = in.head[:0], false
	if !promptMethod.Match(head) {
		return
	}
	sid := sessionField.FindSubmatch(head)
	id := idField.FindSubmatch(head)
	if sid == nil || id == nil {
		return
	}
	in.a.add(string(id[1]), string(sid[1]))
}
