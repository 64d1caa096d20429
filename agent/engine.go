// Package agent is meka's turn engine: it builds each request from the
// session's log, streams the model's answer, dispatches tool calls, keeps
// the limits (MaxTurns, MaxToolCalls, the repeat guard), consults the
// plugin seams (request contributors, stop interceptors, compaction
// contributors, folds), compacts long histories, and reports typed events.
//
// The engine knows no plugin: checklists and plans reach it only through
// the seams in seams.go. It imports model, tool, session and permission.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// StopReason says why a turn ended.
type StopReason string

const (
	StopEndTurn      StopReason = "end_turn"
	StopMaxTokens    StopReason = "max_tokens"
	StopRefusal      StopReason = "refusal"
	StopCanceled     StopReason = "cancelled"
	StopFailed       StopReason = "failed"
	StopMaxTurns     StopReason = "max_turn_requests"
	StopMaxToolCalls StopReason = "max_tool_calls"
	StopRepeat       StopReason = "repeated_call"
	// StopPromptRefused: a prompt guard (a UserPromptSubmit hook) refused
	// the turn's input.
	StopPromptRefused StopReason = "prompt_refused"
	// StopHook: a hook asked the turn to stop ("continue": false).
	StopHook StopReason = "hook_stopped"
)

// Normal reports whether r is a successful end of a turn.
func (r StopReason) Normal() bool { return r == StopEndTurn }

// Log is where the engine appends a session's rows. Append writes rows in
// one transaction and returns them with their sequence numbers.
type Log interface {
	Append(ctx context.Context, rows []session.Row) ([]session.Row, error)
}

// Options configure an Engine. The zero value of each limit means its
// default.
type Options struct {
	Provider model.Provider
	Log      Log
	Tools    *tool.Registry
	// Gate decides at dispatch whether a call may run; nil allows all.
	Gate *tool.Gate

	SessionID string
	Cwd       string
	System    string
	// Prelude, when set, is called once, before the first turn's input is
	// stored: the system prompt it returns replaces System, and its
	// entries (the prompt's record) are stored at the turn before. A host
	// that opens a session ahead of its first turn (an editor's
	// session/new) builds the prompt meanwhile and records it only when a
	// request needs it. An error fails that turn; the next calls again.
	Prelude func(ctx context.Context) (system string, entries []session.Entry, err error)

	Contributors []RequestContributor
	Interceptors []StopInterceptor
	Compactors   []CompactionContributor
	// Folds derive state from the log; their state is checkpointed on
	// every compaction boundary.
	Folds []session.Fold
	// ToolRecorders are asked before every request for the rows that
	// record a change of the tool set.
	ToolRecorders []ToolRecorder
	// Guards are asked before and after every call; PromptGuards before a
	// turn's input is stored.
	Guards       []ToolGuard
	PromptGuards []PromptGuard

	// MaxTurns bounds the model calls of one turn (default 100); rounds
	// spent only on bookkeeping tools are refunded.
	MaxTurns int
	// MaxToolCalls bounds the calls of one turn, bookkeeping included
	// (default 500).
	MaxToolCalls int
	// RepeatWarn is how many identical calls in a row get a warning result
	// instead of running (default 3); one more stops the turn.
	RepeatWarn int
	// MaxParallel bounds concurrently running parallel-safe calls
	// (default 8).
	MaxParallel int

	// ContextWindow is the model's window in tokens; 0 disables automatic
	// compaction.
	ContextWindow int
	// CompactAt is the fraction of ContextWindow past which the next
	// request triggers compaction (default 0.8).
	CompactAt       float64
	MaxOutputTokens int
	Vision          bool

	// Events receives typed events. The engine serializes calls; Events
	// must not block for long.
	Events func(Event)
	// Inbox, when set, is drained before every request: messages sent
	// mid-turn ride the next tool results or reminder.
	Inbox  func() []model.Part
	Now    func() time.Time
	Logger *slog.Logger
}

// Result is the outcome of a turn.
type Result struct {
	Turn   int64
	Stop   StopReason
	Rounds int
	Usage  model.Usage
	// Reply is the text of the last assistant message.
	Reply string
	// Err is why a failed turn failed.
	Err error
}

// ErrBusy is returned by Run while another turn of the engine runs.
var ErrBusy = errors.New("a turn is already running in this session")

// Engine runs the turns of one session. It is safe for concurrent use, but
// runs one turn at a time.
type Engine struct {
	opts   Options
	folder *session.Folder

	specsMu      sync.Mutex // guards specs, specsVersion, specNames and specsSent
	specs        []model.ToolSpec
	specsVersion uint64
	specNames    []string
	specsSent    bool // a request carried specs

	running sync.Mutex // held for the length of a turn or compaction
	// preluded says Options.Prelude has run; guarded by running.
	preluded bool

	mu       sync.Mutex // guards the fields below
	system   string     // Options.System, or what Prelude returned
	rows     []session.Row
	view     []model.Message  // what the model is sent, kept in step with rows
	lastCtx  int              // tokens of the last request, as the provider counted them
	limits   *model.RateLimit // what the last response said of the account's limits
	runs     uint64           // calls of Run so far
	addedLen int              // bytes appended to view since lastCtx was measured

	emitMu sync.Mutex // serializes Events
}

// New builds an engine over a session's rows, replaying every fold. Calls
// left without a result by a crash are closed as failed before the first
// request.
func New(opts Options, rows []session.Row) (*Engine, error) {
	if opts.Provider == nil {
		return nil, errors.New("new engine: no provider")
	}
	if opts.Log == nil {
		return nil, errors.New("new engine: no log")
	}
	if opts.Tools == nil {
		opts.Tools = tool.NewRegistry()
	}
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = 100
	}
	if opts.MaxToolCalls <= 0 {
		opts.MaxToolCalls = 500
	}
	if opts.RepeatWarn <= 0 {
		opts.RepeatWarn = 3
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 8
	}
	if opts.CompactAt <= 0 || opts.CompactAt >= 1 {
		opts.CompactAt = 0.8
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// The engine's own contributor goes first: what no summary may
	// paraphrase, before any plugin's state.
	ret := &retainFold{}
	opts.Folds = append(append([]session.Fold(nil), opts.Folds...), ret)
	opts.Compactors = append([]CompactionContributor{ret}, opts.Compactors...)
	e := &Engine{opts: opts, folder: session.NewFolder(opts.Folds...), system: opts.System, preluded: opts.Prelude == nil}
	e.rows = append([]session.Row(nil), rows...)
	if err := e.refold(); err != nil {
		return nil, fmt.Errorf("new engine: %w", err)
	}
	// After the folds, which may hold the tool set the log records.
	e.toolSpecs()
	return e, nil
}

// Rows returns a copy of the session's rows as the engine holds them.
// RateLimit is what the provider's last response said of the account's
// rate limits; nil before one said anything.
func (e *Engine) RateLimit() *model.RateLimit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.limits
}

func (e *Engine) Rows() []session.Row {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]session.Row(nil), e.rows...)
}

func (e *Engine) emit(ev Event) {
	if e.opts.Events == nil {
		return
	}
	e.emitMu.Lock()
	defer e.emitMu.Unlock()
	e.opts.Events(ev)
}

// refold rebuilds the model's view and every fold from the rows the engine
// holds, and forgets the context measured for a request over other rows.
func (e *Engine) refold() error {
	e.mu.Lock()
	rows := append([]session.Row(nil), e.rows...)
	e.view = BuildView(rows)
	e.lastCtx, e.addedLen = 0, 0
	e.mu.Unlock()
	if err := e.folder.Replay(rows); err != nil {
		return err
	}
	// Replay never produces events: a fold cannot tell replayed rows from
	// live ones, so what replay left to take is dropped here.
	for _, f := range e.opts.Folds {
		if ef, ok := f.(EventFold); ok {
			ef.TakeEvent()
		}
	}
	return nil
}

// appendRows persists rows, folds them in, updates the model's view and
// emits the events folds report. It ignores ctx's cancellation: rows that
// describe what happened are written even when the turn was canceled.
func (e *Engine) appendRows(ctx context.Context, turn int64, entries ...session.Entry) ([]session.Row, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	rows := make([]session.Row, len(entries))
	for i, en := range entries {
		rows[i] = session.Row{Turn: turn, Entry: en}
	}
	stored, err := e.opts.Log.Append(context.WithoutCancel(ctx), rows)
	if err != nil {
		return nil, fmt.Errorf("append rows: %w", err)
	}
	e.mu.Lock()
	e.rows = append(e.rows, stored...)
	e.mu.Unlock()
	e.folder.Apply(stored...)
	for _, r := range stored {
		if _, ok := r.Entry.(session.Compaction); ok {
			e.mu.Lock()
			e.view = BuildView(e.rows)
			e.lastCtx, e.addedLen = 0, 0
			e.mu.Unlock()
			continue
		}
		e.mu.Lock()
		before := len(e.view)
		e.view = appendView(e.view, r.Entry)
		for _, m := range e.view[before:] {
			e.addedLen += messageSize(m)
		}
		e.mu.Unlock()
	}
	for _, f := range e.opts.Folds {
		if ef, ok := f.(EventFold); ok {
			if ev, ok := ef.TakeEvent(); ok {
				e.emit(ev)
			}
		}
	}
	return stored, nil
}

// notice stores and emits a notice.
// emitRecorded reports the plugin rows front doors show live: notices
// and hook runs.
func (e *Engine) emitRecorded(entries []session.Entry) {
	for _, en := range entries {
		switch en := en.(type) {
		case session.Notice:
			e.emit(Notice{Notice: en})
		case session.HookRun:
			e.emit(HookFinished{Run: en})
		}
	}
}

func (e *Engine) notice(ctx context.Context, turn int64, n session.Notice) {
	if _, err := e.appendRows(ctx, turn, n); err != nil {
		e.opts.Logger.Warn("store notice", "session_id", e.opts.SessionID, "err", err)
	}
	e.emit(Notice{Notice: n})
}
