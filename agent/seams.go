package agent

import (
	"context"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// RequestContributor adds a per-request view to what the model sees: its
// parts go into the request's trailing Context block, after the
// conversation, are rebuilt for every request, and are never persisted (a
// plan reminder, a schedule index, the memories).
// Contribute is called once per request from the turn's goroutine.
type RequestContributor interface {
	Contribute(ctx context.Context, info RequestInfo) []model.Part
}

// Placement is where a contributor's view goes in a request.
type Placement int

const (
	// PlaceContext is the request's trailing Context block (the default).
	PlaceContext Placement = iota
	// PlaceSystem is the system instructions, after the system prompt
	// (model.Request.SystemContext).
	PlaceSystem
	// PlaceReminder is the trailing system reminder the model reads last
	// (model.Request.Reminder).
	PlaceReminder
)

// Placed is a RequestContributor that says where its view goes; one that
// is not Placed goes into the Context block. A system or reminder view
// sends its text parts only.
type Placed interface {
	Placement() Placement
}

// RequestInfo describes the request being built.
type RequestInfo struct {
	Turn  int64
	Round int
}

// StopInterceptor is asked when the model ends a turn normally (a reply
// with no tool call). It is never asked for a canceled or failed turn, a
// max_tokens stop or a refusal. It returns an explicit decision and has no
// other effect on the session.
type StopInterceptor interface {
	BeforeStop(ctx context.Context, info StopInfo) StopDecision
}

// StopInfo describes the turn an interceptor is asked about.
type StopInfo struct {
	Turn int64
	// Run is distinct for every call of Engine.Run, so that per-turn
	// counters start over even when a withdrawn or rewound turn's number
	// comes back.
	Run uint64
	// Rounds is how many model calls the turn has made.
	Rounds int
	// ToolCalls counts the calls the model made this turn, bookkeeping
	// included; an interceptor compares it across asks to see whether the
	// model did anything since it last continued the turn.
	ToolCalls int
	// Reply is the text of the reply that would end the turn.
	Reply string
}

// StopDecision is an interceptor's answer. The zero value lets the turn
// end.
type StopDecision struct {
	// Continue keeps the turn going: Message is put before the model as a
	// reminder and Notice (when set) is stored and shown.
	Continue bool
	Message  string
	Notice   *session.Notice
	// Stop, when ending, overrides the turn's stop reason (such as
	// todo_incomplete); Notice is then stored and shown as well.
	Stop StopReason
}

// CompactionContributor adds verbatim text to a compaction summary, such
// as the open checklist, because the calls that built it are what the
// summary replaces.
type CompactionContributor interface {
	CompactionText(ctx context.Context) string
}

// ToolRecorder keeps a recorded part of the tool set in step with the
// log, such as the MCP servers' tools: before every request the engine
// appends the rows it returns (a change of that part, or none), so that
// the fold offering the set applies them and the request carries the new
// set. It is called from the turn's goroutine.
type ToolRecorder interface {
	RecordTools(ctx context.Context, info RequestInfo) []session.Entry
}

// Extension is what a plugin adds to an engine: its tools and its
// contributions to each seam. Dialects and the scheduler return one; the
// host merges them into a session's Options.
type Extension struct {
	Tools        []tool.Tool
	Contributors []RequestContributor
	Interceptors []StopInterceptor
	Compactors   []CompactionContributor
	Folds        []session.Fold
}

// EventFold is a session.Fold that reports its changes: after live rows are
// folded in, the engine takes the fold's event, if any, and emits it.
// Replay never produces events.
type EventFold interface {
	session.Fold
	TakeEvent() (Event, bool)
}
