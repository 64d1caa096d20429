package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// turnState is what one turn keeps between rounds.
type turnState struct {
	turn      int64
	run       uint64 // Engine.runs at the start of this turn
	rounds    int    // model calls made
	charged   int    // rounds counted against MaxTurns
	toolCalls int
	continued int // times interceptors kept the turn going
	usage     model.Usage
	reply     string
	guard     repeatGuard
}

// Run runs one turn: input is stored as the turn's user message, then the
// model is called round after round until it ends the turn, a limit is
// reached, ctx is canceled, or the provider fails. A failed turn returns
// its Result (Stop == StopFailed) and the error.
func (e *Engine) Run(ctx context.Context, input session.UserMessage) (Result, error) {
	if !e.running.TryLock() {
		return Result{}, ErrBusy
	}
	defer e.running.Unlock()

	e.mu.Lock()
	e.runs++
	ts := &turnState{turn: session.LastTurn(e.rows) + 1, run: e.runs}
	e.mu.Unlock()
	ts.guard.warnAt = e.opts.RepeatWarn

	res := e.run(ctx, ts, input)
	e.emit(TurnEnded{Result: res})
	return res, res.Err
}

func (e *Engine) run(ctx context.Context, ts *turnState, input session.UserMessage) Result {
	end := func(stop StopReason, err error) Result {
		return Result{Turn: ts.turn, Stop: stop, Rounds: ts.rounds, Usage: ts.usage, Reply: ts.reply, Err: err}
	}
	if _, err := e.closeOrphans(ctx); err != nil {
		return end(StopFailed, err)
	}
	if err := e.prelude(ctx, ts.turn-1); err != nil {
		return end(StopFailed, err)
	}
	for _, g := range e.opts.PromptGuards {
		v := g.BeforePrompt(ctx, PromptInfo{Turn: ts.turn, Input: input})
		if _, err := e.appendRows(ctx, ts.turn, v.Entries...); err != nil {
			return end(StopFailed, err)
		}
		e.emitRecorded(v.Entries)
		if v.Refuse != "" {
			e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning,
				Title: "Prompt refused by a hook", Description: v.Refuse})
			return end(StopPromptRefused, nil)
		}
		if v.Context != "" {
			input.Expansion = append(append(model.Parts(nil), input.Expansion...), model.Text{Text: v.Context})
		}
	}
	if _, err := e.appendRows(ctx, ts.turn, input); err != nil {
		return end(StopFailed, err)
	}
	e.emit(TurnStarted{Turn: ts.turn, Input: input})

	for {
		if err := ctx.Err(); err != nil {
			return end(StopCanceled, nil)
		}
		if ts.charged >= e.opts.MaxTurns {
			e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning,
				Title: fmt.Sprintf("Turn stopped after %d model requests (the limit)", ts.charged)})
			return end(StopMaxTurns, nil)
		}
		if ts.rounds > 0 {
			if err := e.deliverInbox(ctx, ts.turn); err != nil {
				return end(StopFailed, err)
			}
		}
		spent, compacted, err := e.maybeCompact(ctx, ts.turn)
		// The summary's model call is the turn's spend, compacted or not.
		ts.usage = ts.usage.Add(spent)
		if compacted {
			e.emit(Usage{Round: spent, Turn: ts.usage, ContextTokens: e.viewTokens(), Window: e.opts.ContextWindow})
		}
		if err != nil {
			if ctx.Err() != nil {
				return end(StopCanceled, nil)
			}
			e.opts.Logger.Warn("compact", "session_id", e.opts.SessionID, "err", err)
		}

		if err := e.recordTools(ctx, ts); err != nil {
			return end(StopFailed, err)
		}
		if change, ok := e.toolSpecs(); ok {
			// The set the model sees moved (an MCP server's list changed):
			// the log says so, so a resumed or forked session shows it,
			// and the model is told once, since notices are for people.
			e.notice(ctx, ts.turn, change)
			msg := session.UserMessage{Source: session.SourceReminder,
				Parts: model.Parts{model.Text{Text: "[meka] The tools you can call changed: " + change.Description + "."}}}
			if _, err := e.appendRows(ctx, ts.turn, msg); err != nil {
				return end(StopFailed, err)
			}
		}
		resp, err := e.callModel(ctx, ts)
		if err != nil {
			if ctx.Err() != nil {
				return end(StopCanceled, nil)
			}
			// The log keeps the provider's text whole; the notice caps it.
			e.opts.Logger.Info("model request failed", "session_id", e.opts.SessionID, "turn", ts.turn, "err", err.Error())
			e.notice(ctx, ts.turn, failureNotice(err))
			return end(StopFailed, err)
		}
		ts.reply = resp.Message.Text()
		calls := resp.Message.ToolCalls()

		if len(calls) > 0 {
			stop, err := e.runTools(ctx, ts, resp)
			if err != nil {
				return end(StopFailed, err)
			}
			if stop != "" {
				return end(stop, nil)
			}
			continue
		}

		if _, err := e.appendRows(ctx, ts.turn, assistantEntry(resp)); err != nil {
			return end(StopFailed, err)
		}
		switch resp.Stop {
		case model.StopMaxTokens:
			e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning,
				Title: "The reply was cut off at the output token limit"})
			return end(StopMaxTokens, nil)
		case model.StopRefusal:
			e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning, Title: "The model refused to answer"})
			return end(StopRefusal, nil)
		}
		d := e.beforeStop(ctx, ts)
		if !d.Continue && d.Stop == "" {
			// A message sent while the model wrote its last reply is never
			// dropped: it gets one more round, as it would have ridden the
			// next tool results or nudge.
			delivered, err := e.deliverSteers(ctx, ts.turn)
			if err != nil {
				return end(StopFailed, err)
			}
			if delivered {
				if d.Notice != nil {
					e.notice(ctx, ts.turn, *d.Notice)
				}
				continue
			}
		}
		if !d.Continue {
			if d.Notice != nil {
				e.notice(ctx, ts.turn, *d.Notice)
			}
			if d.Stop != "" {
				return end(d.Stop, nil)
			}
			return end(StopEndTurn, nil)
		}
		if d.Notice != nil {
			e.notice(ctx, ts.turn, *d.Notice)
		}
		msg := session.UserMessage{Parts: model.Parts{model.Text{Text: d.Message}}, Source: session.SourceReminder}
		if _, err := e.appendRows(ctx, ts.turn, msg); err != nil {
			return end(StopFailed, err)
		}
		e.emit(UserMessage{Message: msg})
	}
}

// recordTools appends what the tool recorders say changed.
func (e *Engine) recordTools(ctx context.Context, ts *turnState) error {
	info := RequestInfo{Turn: ts.turn, Round: ts.rounds + 1}
	for _, r := range e.opts.ToolRecorders {
		entries := r.RecordTools(ctx, info)
		if _, err := e.appendRows(ctx, ts.turn, entries...); err != nil {
			return fmt.Errorf("record tool set: %w", err)
		}
		e.emitRecorded(entries)
	}
	return nil
}

// beforeStop asks the interceptors in order; the first that continues the
// turn, or ends it with a stop reason of its own, decides.
func (e *Engine) beforeStop(ctx context.Context, ts *turnState) StopDecision {
	info := StopInfo{Turn: ts.turn, Run: ts.run, Rounds: ts.rounds, ToolCalls: ts.toolCalls, Reply: ts.reply, Continued: ts.continued}
	for _, ic := range e.opts.Interceptors {
		d := ic.BeforeStop(ctx, info)
		if len(d.Entries) > 0 {
			if _, err := e.appendRows(ctx, ts.turn, d.Entries...); err != nil {
				e.opts.Logger.Warn("store interceptor rows", "session_id", e.opts.SessionID, "err", err)
			}
			e.emitRecorded(d.Entries)
		}
		if d.Continue || d.Stop != "" || d.Notice != nil {
			if d.Continue {
				ts.continued++
			}
			return d
		}
	}
	return StopDecision{}
}

// callModel makes one request and streams its answer to Events.
func (e *Engine) callModel(ctx context.Context, ts *turnState) (*model.Response, error) {
	req := e.request(ctx, ts)
	ts.rounds++
	ts.charged++
	resp, err := model.Collect(e.opts.Provider.Stream(ctx, req), func(ev model.Event) {
		switch ev := ev.(type) {
		case model.TextDelta:
			e.emit(TextChunk{Text: ev.Text})
		case model.ThinkingDelta:
			e.emit(ThoughtChunk{Text: ev.Text})
		case model.Switched:
			e.notice(ctx, ts.turn, switchNotice(ev))
		}
	})
	if err != nil {
		return nil, err
	}
	ts.usage = ts.usage.Add(resp.Usage)
	e.mu.Lock()
	e.lastCtx, e.addedLen = resp.Usage.Context(), 0
	prev := e.limits
	if resp.RateLimit != nil {
		e.limits = resp.RateLimit
	}
	e.mu.Unlock()
	if rl := resp.RateLimit; rl != nil {
		e.emit(RateLimit{Limit: *rl})
		// Once as the share left falls below a tenth, not every round.
		share, what, l := rl.Lowest()
		if share < LowRateLimit && (prev == nil || lowest(prev) >= LowRateLimit) {
			title := fmt.Sprintf("Rate limit: %d of %d %s left", l.Remaining, l.Limit, what)
			if !l.Reset.IsZero() {
				title += fmt.Sprintf(", resets in %s", max(l.Reset.Sub(rl.At), 0).Round(time.Second))
			}
			e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning, Title: title})
		}
	}
	e.emit(Usage{Round: resp.Usage, Turn: ts.usage, ContextTokens: resp.Usage.Context(), Window: e.opts.ContextWindow})
	return resp, nil
}

// request builds the next request from the view and the contributors.
// The contributors' parts ride in Request.Context, after the conversation,
// so the persisted prefix the provider caches is the same bytes every
// round.
func (e *Engine) request(ctx context.Context, ts *turnState) *model.Request {
	e.mu.Lock()
	msgs, system := slices.Clone(e.view), e.system
	e.mu.Unlock()

	var extra model.Parts
	var sysText, reminder []string
	info := RequestInfo{Turn: ts.turn, Round: ts.rounds + 1}
	for _, c := range e.opts.Contributors {
		parts := c.Contribute(ctx, info)
		place := PlaceContext
		if p, ok := c.(Placed); ok {
			place = p.Placement()
		}
		switch place {
		case PlaceSystem:
			sysText = append(sysText, textOf(parts)...)
		case PlaceReminder:
			reminder = append(reminder, textOf(parts)...)
		default:
			extra = append(extra, parts...)
		}
	}
	return &model.Request{
		SystemContext:   strings.Join(sysText, "\n\n"),
		Reminder:        strings.Join(reminder, "\n\n"),
		System:          system,
		Messages:        msgs,
		Tools:           e.currentSpecs(),
		MaxOutputTokens: e.opts.MaxOutputTokens,
		Vision:          e.opts.Vision,
		Context:         extra,
		CacheKey:        e.opts.SessionID,
	}
}

// deliverSteers is deliverInbox reporting whether anything was waiting.
func (e *Engine) deliverSteers(ctx context.Context, turn int64) (bool, error) {
	if e.opts.Inbox == nil {
		return false, nil
	}
	parts := e.opts.Inbox()
	if len(parts) == 0 {
		return false, nil
	}
	msg := session.UserMessage{Parts: parts, Source: session.SourceSteer}
	if _, err := e.appendRows(ctx, turn, msg); err != nil {
		return false, err
	}
	e.emit(UserMessage{Message: msg})
	return true, nil
}

// deliverInbox stores messages sent mid-turn so the next request carries
// them after the tool results or reminder they arrived during.
func (e *Engine) deliverInbox(ctx context.Context, turn int64) error {
	_, err := e.deliverSteers(ctx, turn)
	return err
}

// Recover closes the calls a crash left without a result: each gets a
// result saying meka stopped while it ran, the model is told once that
// the turn was interrupted and which calls may have partly run, and a
// notice says so to whoever watches. It returns the calls it closed. A
// host calls it when it opens a session it holds, so resume, transcripts
// and the next request agree; Run calls it too, before a turn starts.
func (e *Engine) Recover(ctx context.Context) ([]model.ToolCall, error) {
	if !e.running.TryLock() {
		return nil, ErrBusy
	}
	defer e.running.Unlock()
	return e.closeOrphans(ctx)
}

// InterruptedResult is the result text of a call meka stopped while it ran.
const InterruptedResult = "meka stopped while this call was running (the process was killed or crashed), so it has no result and its effects may be partial. Check what it did before running it again."

func (e *Engine) closeOrphans(ctx context.Context) ([]model.ToolCall, error) {
	e.mu.Lock()
	orphans := OrphanCalls(e.rows)
	var last int64
	if n := len(e.rows); n > 0 {
		last = e.rows[n-1].Turn
	}
	e.mu.Unlock()
	if len(orphans) == 0 {
		return nil, nil
	}
	entries := make([]session.Entry, 0, len(orphans)+2)
	names := make([]string, len(orphans))
	for i, c := range orphans {
		entries = append(entries, session.ToolResult{CallID: c.ID, Name: c.Name, Status: session.StatusInterrupted,
			Content: model.Parts{model.Text{Text: InterruptedResult}}})
		names[i] = fmt.Sprintf("%s (%s)", e.describeCall(c), c.ID)
	}
	list := strings.Join(names, "; ")
	entries = append(entries, session.UserMessage{Source: session.SourceReminder, Parts: model.Parts{model.Text{Text: fmt.Sprintf(
		"[meka] Your previous turn was interrupted: meka stopped while %s running, so %s may have partly run: %s. "+
			"Check the workspace for their effects before repeating any of them.",
		plural(len(orphans), "tool call was", "tool calls were"), pick(len(orphans), "it", "they"), list)}}})
	n := session.Notice{Severity: session.SeverityWarning,
		Title:       "The last turn was interrupted",
		Description: fmt.Sprintf("meka stopped while %s ran; effects may be partial: %s", plural(len(orphans), "tool call", "tool calls"), list)}
	entries = append(entries, n)
	if _, err := e.appendRows(ctx, last, entries...); err != nil {
		return nil, err
	}
	e.emit(Notice{Notice: n})
	return orphans, nil
}

// describeCall is a call as a person reads it: its title, or its name.
func (e *Engine) describeCall(c model.ToolCall) string {
	if t, ok := e.opts.Tools.Get(c.Name); ok {
		return tool.Title(t, c.Arguments)
	}
	return c.Name
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// OrphanCalls returns the calls of the last assistant message that have no
// result after it.
func OrphanCalls(rows []session.Row) []model.ToolCall {
	for i := len(rows) - 1; i >= 0; i-- {
		a, ok := rows[i].Entry.(session.AssistantMessage)
		if !ok {
			continue
		}
		answered := make(map[string]bool)
		for _, r := range rows[i+1:] {
			if tr, ok := r.Entry.(session.ToolResult); ok {
				answered[tr.CallID] = true
			}
		}
		var out []model.ToolCall
		for _, c := range a.Parts {
			if c, ok := c.(model.ToolCall); ok && !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

func assistantEntry(resp *model.Response) session.AssistantMessage {
	return session.AssistantMessage{Parts: resp.Message.Parts, Usage: resp.Usage, Stop: resp.Stop, Model: resp.Model}
}

// FailedTurnTitle is the title of the notice a failed turn leaves; its
// description is the provider's own text (or a connection error naming
// the endpoint), capped.
const FailedTurnTitle = "The turn failed"

func failureNotice(err error) session.Notice {
	var perr *model.Error
	desc := err.Error()
	if errors.As(err, &perr) {
		desc = perr.Display()
	}
	return session.Notice{Severity: session.SeverityError, Title: FailedTurnTitle, Description: model.Cap(desc, model.DisplayCap)}
}

// prelude runs Options.Prelude once, storing its entries at turn; the
// caller holds running.
func (e *Engine) prelude(ctx context.Context, turn int64) error {
	if e.preluded {
		return nil
	}
	system, entries, err := e.opts.Prelude(ctx)
	if err != nil {
		return fmt.Errorf("prepare the session: %w", err)
	}
	if _, err := e.appendRows(ctx, turn, entries...); err != nil {
		return err
	}
	e.mu.Lock()
	e.system = system
	e.mu.Unlock()
	e.preluded = true
	return nil
}

// textOf is the text of parts, one string each.
func textOf(parts []model.Part) []string {
	var out []string
	for _, p := range parts {
		if t, ok := p.(model.Text); ok && t.Text != "" {
			out = append(out, t.Text)
		}
	}
	return out
}

// switchNotice is the row a move to a fallback profile leaves: which
// profile took over and why, and the thinking the new one is not sent.
func switchNotice(ev model.Switched) session.Notice {
	why := ev.Err.Error()
	var pe *model.Error
	if errors.As(ev.Err, &pe) {
		why = pe.Display()
	}
	desc := fmt.Sprintf("Later turns stay on %s until /profile or a new session.", ev.To.Name)
	for _, prov := range slices.Sorted(maps.Keys(ev.Dropped)) {
		desc += fmt.Sprintf(" %d thinking part(s) of %s are not sent to %s.", ev.Dropped[prov], prov, ev.To.Provider.Name())
	}
	return session.Notice{Severity: session.SeverityWarning,
		Title:       fmt.Sprintf("Switched to profile %s: profile %s failed (%s)", ev.To.Name, ev.From.Name, why),
		Description: desc}
}
