package agent

import (
	"context"
	"encoding/json"

	"meka.dev/meka/model"
	"meka.dev/meka/permission"
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
	// Continued is how many times interceptors kept this turn going so
	// far: one cap on nudges holds whichever plugin nudges.
	Continued int
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
	// Entries are stored before Notice whatever the decision (a hook's
	// run); an interceptor that returns only entries does not decide.
	Entries []session.Entry
}

// ToolGuard is asked about every call that passed the engine's own checks
// (known tool, valid arguments, repeat guard), before the permission gate,
// and again once the call ran: people's hooks. It is called from the
// turn's goroutine before a call, and from the call's own (parallel-safe
// calls run together) after it.
type ToolGuard interface {
	BeforeTool(ctx context.Context, info ToolInfo) ToolVerdict
	AfterTool(ctx context.Context, info ToolInfo, result session.ToolResult) AfterVerdict
}

// ToolInfo is the call a guard is asked about.
type ToolInfo struct {
	Turn int64
	Call tool.Call
	Spec tool.Spec
}

// ToolVerdict is a guard's answer before a call. The zero value lets it
// go on to the permission gate as it is.
type ToolVerdict struct {
	// Refuse, when set, refuses the call: it is the call's result.
	Refuse string
	// Arguments replace the call's, validated again against its schema.
	Arguments json.RawMessage
	// Ask puts the call to a person even when the session's level allows
	// it (the gate's Confirm), with AskReason; without approvals it is
	// refused. It never lets a call run the level refuses.
	Ask       bool
	AskReason string
	// Context is added to the call's result for the model.
	Context string
	// StopTurn refuses the call and ends the turn once the round's results
	// are stored, with Notice shown.
	StopTurn bool
	// Entries are stored before the call's result (a hook's run).
	Entries []session.Entry
}

// AfterVerdict is a guard's answer after a call.
type AfterVerdict struct {
	// Context is added to the call's result for the model.
	Context string
	// StopTurn ends the turn once the round's results are stored.
	StopTurn bool
	// Entries are stored right after the call's result.
	Entries []session.Entry
}

// PromptGuard is asked about a turn's input before it is stored: a
// person's UserPromptSubmit hooks.
type PromptGuard interface {
	BeforePrompt(ctx context.Context, info PromptInfo) PromptVerdict
}

// PromptInfo is the input a prompt guard is asked about.
type PromptInfo struct {
	Turn  int64
	Input session.UserMessage
}

// PromptVerdict is a prompt guard's answer. The zero value stores the
// input as it is.
type PromptVerdict struct {
	// Refuse, when set, refuses the input: it is not stored, Entries and a
	// notice saying Refuse are, and the turn ends with StopPromptRefused.
	Refuse string
	// Context is added to the input for the model (its Expansion).
	Context string
	// Entries are stored before the input.
	Entries []session.Entry
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
	Guards       []ToolGuard
	PromptGuards []PromptGuard
	// Recorders are asked before every request for rows to store (the
	// rows of hooks that ran outside a call or a prompt).
	Recorders []ToolRecorder
	// Host seams, which the engine never calls: Approvals are told of
	// every approval put to a person as it is asked (they must not block);
	// Closers run as the session closes, after its last turn, and the
	// rows they return are stored.
	Approvals []func(ctx context.Context, req permission.Request)
	Closers   []func(ctx context.Context) []session.Entry
}

// EventFold is a session.Fold that reports its changes: after live rows are
// folded in, the engine takes the fold's event, if any, and emits it.
// Replay never produces events.
type EventFold interface {
	session.Fold
	TakeEvent() (Event, bool)
}
