package agent

import (
	"encoding/json"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Event is something front doors render while a turn runs. Variants are
// the structs in this file; plugins add their own by embedding
// PluginEvent.
type Event interface{ isEvent() }

// TurnStarted opens a turn.
type TurnStarted struct {
	Turn int64
	// Input is the user message that started the turn, as stored.
	Input session.UserMessage
}

// TextChunk is a piece of the reply.
type TextChunk struct{ Text string }

// ThoughtChunk is a piece of the model's reasoning.
type ThoughtChunk struct{ Text string }

// UserMessage is a message put before the model inside a turn: a steer, or
// a reminder such as a checklist nudge.
type UserMessage struct{ Message session.UserMessage }

// ToolCallStarted announces a call about to run (or be refused).
type ToolCallStarted struct {
	CallID    string
	Name      string
	Title     string
	Kind      tool.Kind
	Locations []tool.Location
	Arguments json.RawMessage
}

// ToolCallOutput is live output of a running call.
type ToolCallOutput struct {
	CallID string
	Chunk  string
}

// ToolCallProgress replaces what is shown of a running call with Lines,
// whole: a sub-agent's most recent calls.
type ToolCallProgress struct {
	CallID string
	Lines  []string
}

// ToolCallFinished closes a call with its stored result.
type ToolCallFinished struct {
	CallID string
	Result session.ToolResult
}

// Notice is a stage direction or warning, also stored as a row.
type Notice struct{ Notice session.Notice }

// Usage reports tokens after every provider round.
type Usage struct {
	// Round is the usage of the round just finished; Turn adds up the turn.
	Round, Turn model.Usage
	// ContextTokens is how much of the window the last request filled.
	ContextTokens int
	// Window is the profile's context window, 0 when unknown.
	Window int
}

// RateLimit reports what a provider's response said of the account's
// rate limits, after every round whose response said anything.
type RateLimit struct{ Limit model.RateLimit }

// LowRateLimit is the share left of requests or tokens below which the
// engine warns, once, with a notice row.
const LowRateLimit = 0.1

func lowest(r *model.RateLimit) float64 { s, _, _ := r.Lowest(); return s }

// CompactionStarted reports that older turns are being summarized; a
// Compacted or a CompactionFailed follows.
type CompactionStarted struct {
	// Trigger is "auto" (the window filled) or "manual" (Compact); Focus
	// what a manual one was asked to keep in particular.
	Trigger string
	Focus   string
	// TokensBefore estimates the conversation the next request carried
	// before the compaction.
	TokensBefore int
}

// CompactionFailed reports a compaction that failed or was canceled; the
// log is as it was.
type CompactionFailed struct {
	Err      error
	Canceled bool
}

// Compacted reports that older turns were summarized.
type Compacted struct {
	Summary  string
	KeptFrom int64
	// Trigger and TokensBefore are the CompactionStarted's; TokensAfter
	// estimates the conversation after it. RowsSummarized counts the log
	// rows the summary replaced, KeptTurns the turns kept as they were;
	// Checkpoint is the folds' state (a checklist, a plan) carried past
	// the boundary, as recorded.
	Trigger        string
	TokensBefore   int
	TokensAfter    int
	RowsSummarized int
	KeptTurns      int
	Checkpoint     map[string]json.RawMessage
	Focus          string
	// Dropped is what the summary replaced, as the row records it.
	Dropped session.Dropped
	// Usage is what the compaction's model call spent; a Usage event with
	// the gauge after the compaction follows.
	Usage model.Usage
}

// TurnEnded closes a turn.
type TurnEnded struct{ Result Result }

// PluginEvent is embedded by events that plugins define, such as a plan
// change, so they satisfy Event without the engine knowing them.
type PluginEvent struct{}

// HookFinished reports a person's hook that ran (its row is stored).
type HookFinished struct{ Run session.HookRun }

func (HookFinished) isEvent()      {}
func (TurnStarted) isEvent()       {}
func (TextChunk) isEvent()         {}
func (ThoughtChunk) isEvent()      {}
func (UserMessage) isEvent()       {}
func (ToolCallStarted) isEvent()   {}
func (ToolCallOutput) isEvent()    {}
func (ToolCallProgress) isEvent()  {}
func (ToolCallFinished) isEvent()  {}
func (Notice) isEvent()            {}
func (RateLimit) isEvent()         {}
func (Usage) isEvent()             {}
func (CompactionStarted) isEvent() {}
func (CompactionFailed) isEvent()  {}
func (Compacted) isEvent()         {}
func (TurnEnded) isEvent()         {}
func (PluginEvent) isEvent()       {}
