// Package events is meka's one event vocabulary: the names and payloads
// that the HTTP feed, `meka --oneshot --json`, session export and hooks'
// stdin share. Durable events are built from session rows (FromRows) in
// the transaction that stores them, so every process that writes a
// session feeds the same events with the same ids; turn events are built
// from the engine's result (TurnOf).
//
// The wire form of one event is a Frame; docs/events.schema.json
// describes every type and payload, versioned by SchemaVersion.
package events

import (
	"context"
	"encoding/json"
	"strconv"
	"time"
)

// SchemaVersion is the version of docs/events.schema.json. It changes
// when a payload loses or changes a field; added fields and types keep it.
const SchemaVersion = "1"

// Event types. Durable ones are stored in the feed with an id; the
// others are ephemeral frames.
const (
	// SessionStarted opens a --json stream: which session the lines are
	// about (ephemeral).
	SessionStarted = "session.started"
	SessionCreated = "session.created"

	MessageCreated   = "message.created"
	ToolStarted      = "tool.started"
	ToolFinished     = "tool.finished"
	ChecklistUpdated = "checklist.updated"
	PlanUpdated      = "plan.updated"
	Notice           = "notice"
	ContextCompacted = "context.compacted"
	// ContextCompacting says a compaction is starting (no row: what is
	// summarized is not decided until it lands).
	ContextCompacting = "context.compacting"
	// HookFinished is one run of a person's hook (a session.HookRun row).
	HookFinished = "hook.finished"

	TurnStarted   = "turn.started"
	TurnCompleted = "turn.completed"
	// TurnFailed is how --json ends a failed turn: the payload of
	// turn.completed, status "failed", with the problem. The HTTP feed
	// keeps turn.completed for every ending.
	TurnFailed = "turn.failed"

	ApprovalRequested    = "approval.requested"
	ApprovalResolved     = "approval.resolved"
	ElicitationRequested = "elicitation.requested"
	ElicitationResolved  = "elicitation.resolved"

	// Ephemeral.
	MessageDelta = "message.delta"
	ThoughtDelta = "thought.delta"
	ToolOutput   = "tool.output"
	UsageUpdated = "usage.updated"
	// FeedReset tells a stream its cursor is not in the feed: older than
	// the retention ("expired": it goes on from the oldest kept) or newer
	// than the newest ("unknown", e.g. a restored database: it goes on
	// live). The client refetches what it shows.
	FeedReset = "feed.reset"
)

// Reset is the data of a feed.reset.
type Reset struct {
	Reason   string `json:"reason"` // "expired" or "unknown"
	OldestID int64  `json:"oldest_id"`
	LatestID int64  `json:"latest_id"`
}

// Entry is an event to store: what happened, in which session.
type Entry struct {
	SessionID string
	Turn      int64
	Type      string
	Data      json.RawMessage
}

// Event is a stored event, with its durable id.
type Event struct {
	ID int64
	Entry
	Time time.Time
}

// Store is where durable events are kept. Implementations are safe for
// concurrent use; ids are global and strictly increasing in commit order.
type Store interface {
	Append(ctx context.Context, entries []Entry) ([]Event, error)
	// After returns up to limit events with an id above after, oldest
	// first; a non-empty sessionID keeps that session's only.
	After(ctx context.Context, after int64, sessionID string, limit int) ([]Event, error)
	// Before returns the newest events with an id below before, up to
	// limit, oldest first; a non-empty sessionID keeps that session's
	// only. A client reads a long history from its end this way.
	Before(ctx context.Context, before int64, sessionID string, limit int) ([]Event, error)
	// Bounds returns the oldest and newest ids, 0 and 0 when empty.
	Bounds(ctx context.Context) (oldest, newest int64, err error)
	// Unfinished returns the turn.started events no turn.completed of the
	// same turn_id follows, oldest first.
	Unfinished(ctx context.Context) ([]Event, error)
	// TurnEvents returns the turn.started and turn.completed events of
	// one turn of a session, oldest first.
	TurnEvents(ctx context.Context, sessionID, turnID string) ([]Event, error)
	// Changed is closed at this process's next commit of events.
	Changed() <-chan struct{}
	// Prune deletes the oldest events, those stored before before, up to
	// the first kept, always keeping the newest; it returns how many.
	Prune(ctx context.Context, before time.Time) (int64, error)
}

// Frame is one event on the wire: an SSE frame's data, a webhook's body,
// a line of --json. ID is empty for ephemeral events.
type Frame struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	SessionID string          `json:"session_id,omitempty"`
	Turn      int64           `json:"turn,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// AppendJSON appends f's JSON. The envelope is written by hand, with the
// time to the millisecond: data is already JSON, which json.Marshal would
// parse again, and every door writes the same bytes for one event.
func (f Frame) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if f.ID != "" {
		b = append(b, `"id":"`...)
		b = append(b, f.ID...)
		b = append(b, `",`...)
	}
	b = append(b, `"type":`...)
	b = strconv.AppendQuote(b, f.Type)
	b = append(b, `,"timestamp":"`...)
	b = f.Timestamp.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, '"')
	if f.SessionID != "" {
		b = append(b, `,"session_id":`...)
		b = strconv.AppendQuote(b, f.SessionID)
	}
	if f.Turn != 0 {
		b = append(b, `,"turn":`...)
		b = strconv.AppendInt(b, f.Turn, 10)
	}
	b = append(b, `,"data":`...)
	if len(f.Data) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, f.Data...)
	}
	return append(b, '}')
}

// MarshalJSON is AppendJSON, for webhook bodies and the like.
func (f Frame) MarshalJSON() ([]byte, error) { return f.AppendJSON(nil), nil }

// Frame is the wire form of a stored event. Its time is cut to the
// millisecond the stores keep, so a live frame and its replay agree.
func (e Event) Frame() Frame {
	return Frame{ID: strconv.FormatInt(e.ID, 10), Type: e.Type, Timestamp: e.Time.UTC().Truncate(time.Millisecond), SessionID: e.SessionID, Turn: e.Turn, Data: e.Data}
}

// Ephemeral is the wire form of an event that is not stored.
func Ephemeral(typ, sessionID string, turn int64, now time.Time, data any) Frame {
	return Frame{Type: typ, Timestamp: now.UTC(), SessionID: sessionID, Turn: turn, Data: MustJSON(data)}
}

// MustJSON encodes meka's own values, which always encode.
func MustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
