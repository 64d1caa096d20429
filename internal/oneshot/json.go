package oneshot

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/google/uuid"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/session"
)

// feedPage bounds one read of the feed.
const feedPage = 256

// jsonOut writes --json's lines: the shared event vocabulary, one frame
// a line. Durable events are read back from the feed the store wrote
// with the rows, so each line carries the id `meka serve` gives it.
type jsonOut struct {
	feed  events.Store
	sid   string
	now   func() time.Time
	relay bool

	mu     sync.Mutex // guards w, buf, after, failed, turn
	w      io.Writer
	buf    []byte
	after  int64
	failed map[int64]bool // ids of turn.completed events to write as turn.failed
	turn   *events.Turn   // the turn running, as turn.started recorded it
}

func newJSONOut(w io.Writer, feed events.Store, sid string, now func() time.Time, relay bool) *jsonOut {
	return &jsonOut{feed: feed, sid: sid, now: now, relay: relay, w: w, failed: map[int64]bool{}}
}

// start names the session on the first line, unless Announce did, and
// sets the feed cursor to now, so a resumed session's history is not
// replayed.
func (j *jsonOut) start(ctx context.Context, s *host.Session, resumed, announced bool) error {
	_, newest, err := j.feed.Bounds(ctx)
	if err != nil {
		return err
	}
	if announced {
		j.mu.Lock()
		j.after = newest
		j.mu.Unlock()
		return nil
	}
	m := s.Meta()
	d := map[string]any{"session_id": s.ID(), "schema_version": events.SchemaVersion, "cwd": m.Cwd, "resumed": resumed}
	if p := s.Profile(); p.Name != "" {
		d["profile"] = p.Name
	}
	if p := s.Profile(); p.Model != "" {
		d["model"] = p.Model
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.after = newest
	j.write(events.Ephemeral(events.SessionStarted, s.ID(), 0, j.now(), d))
	return nil
}

// tail writes the session's durable events as they commit until stop is
// closed, then writes what is left.
func (j *jsonOut) tail(ctx context.Context, stop <-chan struct{}) {
	for {
		changed := j.feed.Changed()
		j.drain(ctx)
		select {
		case <-changed:
		case <-stop:
			j.drain(ctx)
			return
		case <-ctx.Done():
			return
		}
	}
}

func (j *jsonOut) drain(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for range 1 << 16 { // bounded: a page at a time, as far as the feed goes
		j.mu.Lock()
		after := j.after
		j.mu.Unlock()
		evs, err := j.feed.After(ctx, after, j.sid, feedPage)
		if err != nil || len(evs) == 0 {
			return
		}
		j.mu.Lock()
		for _, e := range evs {
			f := e.Frame()
			if f.Type == events.TurnCompleted && j.failed[e.ID] {
				f.Type = events.TurnFailed
			}
			if f.Type == events.Notice {
				f.Data = relayed(f.Data, j.relay)
			}
			j.write(f)
			j.after = e.ID
		}
		j.mu.Unlock()
	}
}

// event records the turn events the engine's events make.
func (j *jsonOut) event(ev agent.Event) {
	if ev, ok := ev.(agent.CompactionStarted); ok {
		j.write(events.Ephemeral(events.ContextCompacting, j.sid, 0, j.now(), events.CompactingData(ev)))
		return
	}
	if ev, ok := ev.(agent.TurnStarted); ok {
		t := &events.Turn{ID: uuid.Must(uuid.NewV7()).String(), SessionID: j.sid, Source: events.Source(ev.Input.Source),
			Status: "running", StartedAt: j.now().UTC()}
		evs, _ := j.feed.Append(context.Background(), []events.Entry{{SessionID: j.sid, Turn: ev.Turn, Type: events.TurnStarted,
			Data: events.MustJSON(map[string]string{"turn_id": t.ID, "source": t.Source})}})
		if len(evs) == 1 {
			t.FirstEventID = evs[0].ID
		}
		j.mu.Lock()
		j.turn = t
		j.mu.Unlock()
	}
}

// end records the turn's end: turn.completed in the feed, written as
// turn.failed when it failed.
func (j *jsonOut) end(res agent.Result) {
	j.mu.Lock()
	t := j.turn
	j.turn = nil
	j.mu.Unlock()
	if t == nil { // the turn never began (a refused prompt)
		t = &events.Turn{ID: uuid.Must(uuid.NewV7()).String(), SessionID: j.sid, Source: "client", StartedAt: j.now().UTC()}
	}
	t.End(res, j.now(), j.relay)
	evs, err := j.feed.Append(context.Background(), []events.Entry{{SessionID: j.sid, Turn: res.Turn, Type: events.TurnCompleted, Data: events.MustJSON(t)}})
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil || len(evs) != 1 {
		typ := events.TurnCompleted
		if t.Status == "failed" {
			typ = events.TurnFailed
		}
		j.write(events.Ephemeral(typ, j.sid, res.Turn, j.now(), t))
		return
	}
	if t.Status == "failed" {
		j.failed[evs[0].ID] = true
	}
}

// relayed drops a provider's text from a notice unless relaying is on,
// the policy every front door applies (host.RelayNotice).
func relayed(data json.RawMessage, relay bool) json.RawMessage {
	var n struct {
		Severity string `json:"severity"`
		Title    string `json:"title"`
		Text     string `json:"text"`
	}
	if json.Unmarshal(data, &n) != nil {
		return data
	}
	kept := host.RelayNotice(session.Notice{Title: n.Title, Description: n.Text}, relay)
	if kept.Description == n.Text {
		return data
	}
	n.Text = kept.Description
	return events.MustJSON(n)
}

var nowFunc = time.Now

// record stores a durable event of the session's; the tail writes it.
func (j *jsonOut) record(typ string, data any) {
	j.feed.Append(context.Background(), []events.Entry{{SessionID: j.sid, Type: typ, Data: events.MustJSON(data)}})
}

// ephemeral writes an event that is not stored.
func (j *jsonOut) ephemeral(typ string, data any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.write(events.Ephemeral(typ, j.sid, 0, j.now(), data))
}

// write writes one line; the caller holds j.mu.
func (j *jsonOut) write(f events.Frame) {
	j.buf = append(f.AppendJSON(j.buf[:0]), '\n')
	j.w.Write(j.buf)
}

// Announce writes --json's first line for a session about to be created
// with id, before anything slow (the database, the prompt) happens, so a
// harness sees the session at once. StartFailed ends such a stream when
// the session or its turn could not be started after all.
func Announce(w io.Writer, id, cwd string, now time.Time) {
	d := map[string]any{"session_id": id, "schema_version": events.SchemaVersion, "cwd": cwd, "resumed": false}
	w.Write(append(events.Ephemeral(events.SessionStarted, id, 0, now, d).AppendJSON(nil), '\n'))
}

// StartFailed writes a turn.failed line for a turn that never began:
// why is on stderr, as without --json.
func StartFailed(w io.Writer, id string, now time.Time) {
	now = now.UTC()
	t := events.Turn{ID: uuid.Must(uuid.NewV7()).String(), SessionID: id, Source: "client", Status: "failed", StartedAt: now, EndedAt: &now,
		Error: &events.Problem{Type: "/v1/problems/start-failed", Title: "meka could not start the turn", Status: 500, Code: "start-failed", Where: "stderr"}}
	w.Write(append(events.Ephemeral(events.TurnFailed, id, 0, now, t).AppendJSON(nil), '\n'))
}
