package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// entry is one session the connection has open: the host session, the
// prompt in flight, and what its rendering remembers.
type entry struct {
	s  *server
	id string

	mu    sync.Mutex // guards the fields below
	hs    *host.Session
	unsub func()
	// inFlight is set from the moment a prompt is accepted until its
	// response is decided; cancel cancels its turn once it runs.
	inFlight bool
	cancel   context.CancelCauseFunc
	// seq is the wire position of the prompt last accepted, and answered
	// is closed once its response is on the wire: a prompt sent after a
	// cancel of that one waits for it.
	seq      uint64
	answered chan struct{}
	// latched is a cancel that arrived for a prompt on its way, applied as
	// its turn starts.
	latched bool
	// switching is set while the session is reopened on another profile.
	switching bool
	ids       idAllocator
	calls     map[string]*callState // by the provider's call id
	// titled is set once the session's title went out.
	titled bool
	// compactions numbers the session's compactions, for their ids;
	// compacting is the id of the one running live, if any.
	compactions int
	compacting  string
	// files serves the session's files through the client, when it can.
	files *editorFiles
	// messages are the ids of the messages being streamed, by chunk tag;
	// msgN numbers them, under msgToken, unique to the entry.
	messages map[string]string
	msgN     int
	msgToken string
	// cost is what the session's model calls have cost, in US dollars,
	// as far as their prices are known; costBefore what it had cost when
	// the turn running began.
	cost, costBefore float64
	// parent is set on a sub-agent's entry, shown as a session of its own
	// (subagents.go); children are the sub-agents shown so, by session
	// id, and stopChildren stops watching for more.
	parent       *entry
	children     map[string]*entry
	stopChildren func()
}

func newEntry(s *server, hs *host.Session, fresh bool) *entry {
	e := &entry{s: s, id: hs.ID(), calls: make(map[string]*callState), messages: make(map[string]string), children: make(map[string]*entry)}
	e.ids = newIDAllocator(fresh)
	var b [4]byte
	_, _ = rand.Read(b[:])
	e.msgToken = hex.EncodeToString(b[:])
	return e
}

// attach subscribes to hs's events and routes its approvals and files
// through the client.
func (e *entry) attach(hs *host.Session) {
	e.detachChildren()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unsub != nil {
		e.unsub()
		e.hs.SetAsker(nil)
		e.hs.SetElicitor(nil)
		e.hs.SetFiles(nil)
		e.hs.SetFilesDiverge(false)
	}
	e.hs = hs
	e.cost = recordedCost(hs)
	e.costBefore = e.cost
	e.unsub = hs.Subscribe(e.onEvent)
	hs.SetAsker(e)
	hs.SetElicitor(e)
	caps := e.s.caps()
	if caps.Subagents != nil {
		e.stopChildren = hs.OnChild(e.childOpened)
	}
	// Both capabilities or neither: with reads alone the edit would be
	// computed from a buffer and land on disk. Such a client's buffers
	// then differ from what is written, which the write says.
	switch {
	case caps.FS.ReadTextFile && caps.FS.WriteTextFile:
		e.files = &editorFiles{s: e.s, sessionID: e.id}
		hs.SetFiles(e.files)
	case caps.FS.ReadTextFile:
		hs.SetFilesDiverge(true)
	}
}

// detach stops rendering the session and routing through the client.
func (e *entry) detach() {
	e.detachChildren()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unsub == nil {
		return
	}
	e.unsub()
	e.unsub = nil
	e.hs.SetAsker(nil)
	e.hs.SetElicitor(nil)
	e.hs.SetFiles(nil)
	e.hs.SetFilesDiverge(false)
}

func (e *entry) session() *host.Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hs
}

// busy reports whether a prompt is in flight or a turn runs (a background
// report's).
func (e *entry) busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inFlight || e.switching || e.hs.Busy()
}

// cancelTurn cancels the prompt in flight: at once if its turn runs, as
// it starts if it is on its way. With nothing in flight it is discarded.
// Prompts read but not yet started are latched by arrivals, not here.
func (e *entry) cancelTurn() {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.cancel != nil:
		e.cancel(errCancelled)
	case e.inFlight:
		e.latched = true
	}
}

// announce sends what follows a creation response: the palette, the
// skills a new session skipped, the context gauge as the log recorded it, and (for a session from before)
// its title.
func (e *entry) announce(ctx context.Context, titled bool) {
	hs := e.session()
	e.s.notify(ctx, e.id, AvailableCommandsUpdate{AvailableCommands: commands(hs)})
	e.confinementNotice(ctx, hs.Level())
	if !titled {
		// A new session's skipped skills; a loaded one replays them.
		for _, n := range hs.StartNotices() {
			e.s.notify(ctx, e.id, e.notice(n))
		}
	}
	if used, size, ok := recordedUsage(hs); ok {
		e.s.notify(ctx, e.id, e.usageUpdate(used, size))
	}
	if titled {
		if t := hs.Meta().Title; t != "" {
			e.mu.Lock()
			e.titled = true
			e.mu.Unlock()
			e.s.notify(ctx, e.id, SessionInfoUpdate{Title: &t})
		}
	}
}

// confinementNotice warns, at a level whose commands cannot be confined
// here, that they are refused, what is missing and what to do.
func (e *entry) confinementNotice(ctx context.Context, l permission.Level) {
	if e.s.opts.Confinement == nil {
		return
	}
	if gap := e.s.opts.Confinement(l); gap != "" {
		e.s.notify(ctx, e.id, e.notice(session.Notice{Severity: session.SeverityWarning,
			Title: "No confinement here: the " + l.String() + " level refuses shell commands", Description: gap}))
	}
}

// recordedUsage is the gauge as the session's last reply left it.
func recordedUsage(hs *host.Session) (used, size int, ok bool) {
	size = hs.Profile().ContextWindow
	if size <= 0 {
		return 0, 0, false
	}
	rows := hs.Engine().Rows()
	for i := len(rows) - 1; i >= 0; i-- {
		if a, ok := rows[i].Entry.(session.AssistantMessage); ok {
			return a.Usage.Context(), size, true
		}
	}
	return 0, size, true
}

// recordedCost is what the model calls the session's log records cost:
// its replies' and its sub-agents'.
func recordedCost(hs *host.Session) float64 { return session.Spent(hs.Engine().Rows()).Cost }

// idAllocator gives tool calls their ids in the client's thread: the
// provider's, unless the thread already has it or may (a thread from
// before this connection), then one made unique.
type idAllocator struct {
	fresh bool
	token string
	used  map[string]bool
	n     int
}

func newIDAllocator(fresh bool) idAllocator {
	a := idAllocator{fresh: fresh, used: make(map[string]bool)}
	if !fresh {
		var b [3]byte
		_, _ = rand.Read(b[:])
		a.token = hex.EncodeToString(b[:])
	}
	return a
}

func (a *idAllocator) assign(provider string) string {
	base := provider
	if base == "" {
		base = "call"
	}
	if a.fresh && !a.used[base] {
		a.used[base] = true
		return base
	}
	for {
		a.n++
		id := fmt.Sprintf("%s~%s%d", base, a.token, a.n)
		if !a.used[id] {
			a.used[id] = true
			return id
		}
	}
}
