package httpapi

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/google/uuid"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// attached is a session this server has open: its turns, its pending
// approvals, and the subscription that turns its events into frames.
type attached struct {
	srv   *Server
	s     *host.Session
	unsub func()

	mu        sync.Mutex           // guards the fields below
	turns     map[string]*turnInfo // by turn id
	current   *turnInfo            // the running turn, nil when idle
	next      *turnInfo            // a client turn started but not yet begun by the engine
	approvals map[string]*approval // pending and resolved, by id
	// elicitations are MCP servers' requests for input, by id.
	elicitations map[string]*elicitation
}

// turnInfo is a turn as the API reports it (events.Turn), and what the
// server needs to run it.
type turnInfo struct {
	events.Turn

	number int64         // the engine's turn number
	own    bool          // started by this server, which ends it
	cancel func()        // cancels an own turn, before or after it began
	done   chan struct{} // closed when the turn ended
}

// attach returns this server's state for s, subscribing to it once.
func (srv *Server) attach(s *host.Session) *attached {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if a, ok := srv.sessions[s.ID()]; ok && a.s == s {
		return a
	}
	a := &attached{srv: srv, s: s, turns: make(map[string]*turnInfo), approvals: make(map[string]*approval),
		elicitations: make(map[string]*elicitation)}
	a.unsub = s.Subscribe(a.event)
	s.SetAsker(permission.AskerFunc(a.ask))
	s.SetElicitor(host.ElicitorFunc(a.elicit))
	srv.sessions[s.ID()] = a
	return a
}

// detach forgets a session the host released.
func (srv *Server) detach(id string) {
	srv.mu.Lock()
	a := srv.sessions[id]
	delete(srv.sessions, id)
	srv.mu.Unlock()
	if a != nil {
		a.unsub()
	}
}

// open attaches to the session id, opening it on the host if needed.
func (srv *Server) open(ctx context.Context, id string) (*attached, error) {
	if s, ok := srv.opts.Host.Get(id); ok {
		if s.Meta().ParentID != "" {
			return nil, errSubAgent // held while its parent's call runs, or after
		}
		return srv.attach(s), nil
	}
	meta, err := srv.opts.Host.Store().Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if meta.ID != id {
		return nil, session.ErrNotFound // full ids only over HTTP
	}
	if meta.ParentID != "" {
		return nil, errSubAgent
	}
	s, err := srv.opts.Host.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return srv.attach(s), nil
}

// event renders one engine event: deltas as ephemeral frames, turn
// boundaries as durable events. Rows' own events are stored with them.
func (a *attached) event(ev agent.Event) {
	id := a.s.ID()
	switch ev := ev.(type) {
	case agent.TextChunk:
		a.srv.broadcast(id, "message.delta", map[string]string{"text": ev.Text})
	case agent.ThoughtChunk:
		a.srv.broadcast(id, "thought.delta", map[string]string{"text": ev.Text})
	case agent.ToolCallOutput:
		a.srv.broadcast(id, "tool.output", map[string]string{"call_id": ev.CallID, "chunk": ev.Chunk})
	case agent.ToolCallProgress:
		// A sub-agent's recent calls, whole: the frame replaces what the
		// call shows rather than adding to it.
		a.srv.broadcast(id, "tool.output", map[string]any{"call_id": ev.CallID, "progress": ev.Lines})
	case agent.Usage:
		a.srv.broadcast(id, "usage.updated", map[string]int{"used": ev.ContextTokens, "size": ev.Window})
	case host.TaskChanged:
		typ := "task.started"
		if ev.Task.Exited() {
			typ = "task.finished"
		}
		a.srv.record(context.Background(), Entry{SessionID: id, Type: typ, Data: mustJSON(taskViewOf(id, ev.Task, a.srv.opts.Now()))})
	case agent.CompactionStarted:
		a.srv.broadcast(id, events.ContextCompacting, events.CompactingData(ev))
	case agent.TurnStarted:
		a.turnStarted(ev)
	case agent.TurnEnded:
		a.turnEnded(ev.Result)
	}
}

func (a *attached) turnStarted(ev agent.TurnStarted) {
	a.mu.Lock()
	t := a.next
	a.next = nil
	if t == nil {
		t = &turnInfo{Turn: events.Turn{ID: uuid.Must(uuid.NewV7()).String(), SessionID: a.s.ID(), Source: events.Source(ev.Input.Source),
			Status: "running", StartedAt: a.srv.opts.Now().UTC()}, done: make(chan struct{})}
		pruneDone(a.turns, func(t *turnInfo) bool { return t.EndedAt != nil })
		a.turns[t.ID] = t
	}
	t.number = ev.Turn
	a.current = t
	a.mu.Unlock()
	evs := a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Turn: ev.Turn, Type: "turn.started",
		Data: mustJSON(map[string]string{"turn_id": t.ID, "source": t.Source})})
	if len(evs) == 1 {
		a.mu.Lock()
		t.FirstEventID = evs[0].ID
		a.mu.Unlock()
	}
}

// turnEnded ends a turn the server did not start (a job, a report); a
// client's turn ends when its Run returns, so that a client reacting to
// turn.completed finds the session free.
func (a *attached) turnEnded(res agent.Result) {
	a.mu.Lock()
	t := a.current
	if t == nil || t.own {
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.finish(t, res)
}

// finish records a turn's end.
func (a *attached) finish(t *turnInfo, res agent.Result) {
	var p *problem
	if res.Err != nil {
		pr := a.srv.turnProblem(res.Err) // it logs: not under the session's mutex
		p = &pr
	}
	now := a.srv.opts.Now().UTC()
	a.mu.Lock()
	if a.current == t {
		a.current = nil
	}
	t.End(res, now, false)
	t.Error = p
	view := *t
	a.mu.Unlock()
	view.done = nil
	evs := a.srv.record(context.Background(), Entry{SessionID: a.s.ID(), Turn: res.Turn, Type: "turn.completed", Data: mustJSON(view)})
	a.mu.Lock()
	if len(evs) == 1 {
		t.LastEventID = evs[0].ID
	}
	close(t.done)
	a.mu.Unlock()
}

// record stores events, logging a failure: the change they describe has
// happened either way.
func (srv *Server) record(ctx context.Context, entries ...Entry) []Event {
	evs, err := srv.opts.Feed.Append(context.WithoutCancel(ctx), entries)
	if err != nil {
		srv.log.Warn("record feed events", "err", err)
		return nil
	}
	return evs
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the server's own values
	}
	return b
}

// keepResolved bounds what a long-lived session remembers of ended turns
// and answered approvals and elicitations: enough to answer a late GET or
// a second answer (409) for a while, never an ever-growing map.
const keepResolved = 256

// pruneDone drops the oldest finished entries of m (ids are UUIDv7, so
// they sort by time) once it holds more than keepResolved. Callers hold
// the attached session's mutex.
func pruneDone[V any](m map[string]V, done func(V) bool) {
	if len(m) <= keepResolved {
		return
	}
	ids := make([]string, 0, len(m))
	for id, v := range m {
		if done(v) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids[:min(len(ids), len(m)-keepResolved/2)] {
		delete(m, id)
	}
}
