package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// turnState is what one turn keeps between rounds.
type turnState struct {
	turn      int64
	run       uint64 // Engine.runs at the start of this turn
	rounds    int    // model calls made
	charged   int    // rounds counted against MaxTurns
	toolCalls int
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
	if err := e.closeOrphans(ctx, ts.turn); err != nil {
		return end(StopFailed, err)
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
		if err := e.maybeCompact(ctx, ts.turn); err != nil {
			if ctx.Err() != nil {
				return end(StopCanceled, nil)
			}
			e.opts.Logger.Warn("compact", "session_id", e.opts.SessionID, "err", err)
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

// beforeStop asks the interceptors in order; the first that continues the
// turn, or ends it with a stop reason of its own, decides.
func (e *Engine) beforeStop(ctx context.Context, ts *turnState) StopDecision {
	info := StopInfo{Turn: ts.turn, Run: ts.run, Rounds: ts.rounds, ToolCalls: ts.toolCalls, Reply: ts.reply}
	for _, ic := range e.opts.Interceptors {
		if d := ic.BeforeStop(ctx, info); d.Continue || d.Stop != "" || d.Notice != nil {
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
		}
	})
	if err != nil {
		return nil, err
	}
	ts.usage = ts.usage.Add(resp.Usage)
	e.mu.Lock()
	e.lastCtx, e.addedLen = resp.Usage.Context(), 0
	e.mu.Unlock()
	e.emit(Usage{Round: resp.Usage, Turn: ts.usage, ContextTokens: resp.Usage.Context(), Window: e.opts.ContextWindow})
	return resp, nil
}

// request builds the next request from the view and the contributors.
// The contributors' parts ride in Request.Context, after the conversation,
// so the persisted prefix the provider caches is the same bytes every
// round.
func (e *Engine) request(ctx context.Context, ts *turnState) *model.Request {
	e.mu.Lock()
	msgs := slices.Clone(e.view)
	e.mu.Unlock()

	var extra model.Parts
	info := RequestInfo{Turn: ts.turn, Round: ts.rounds + 1}
	for _, c := range e.opts.Contributors {
		extra = append(extra, c.Contribute(ctx, info)...)
	}
	return &model.Request{
		System:          e.opts.System,
		Messages:        msgs,
		Tools:           e.specs,
		MaxOutputTokens: e.opts.MaxOutputTokens,
		Vision:          e.opts.Vision,
		Context:         extra,
		CacheKey:        e.opts.SessionID,
	}
}

// deliverInbox stores messages sent mid-turn so the next request carries
// them after the tool results or reminder they arrived during.
func (e *Engine) deliverInbox(ctx context.Context, turn int64) error {
	if e.opts.Inbox == nil {
		return nil
	}
	parts := e.opts.Inbox()
	if len(parts) == 0 {
		return nil
	}
	msg := session.UserMessage{Parts: parts, Source: session.SourceSteer}
	if _, err := e.appendRows(ctx, turn, msg); err != nil {
		return err
	}
	e.emit(UserMessage{Message: msg})
	return nil
}

// closeOrphans answers calls that never got a result (a crash between a
// call and its result) as failed, so the next request is well formed.
func (e *Engine) closeOrphans(ctx context.Context, turn int64) error {
	e.mu.Lock()
	orphans := OrphanCalls(e.rows)
	var last int64
	if n := len(e.rows); n > 0 {
		last = e.rows[n-1].Turn
	}
	e.mu.Unlock()
	if len(orphans) == 0 {
		return nil
	}
	entries := make([]session.Entry, len(orphans))
	for i, c := range orphans {
		entries[i] = session.ToolResult{CallID: c.ID, Name: c.Name, Status: session.StatusCanceled,
			Content: model.Parts{model.Text{Text: "This call never finished: the session stopped before it returned a result."}}}
	}
	if last == 0 {
		last = turn
	}
	_, err := e.appendRows(ctx, last, entries...)
	return err
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

func failureNotice(err error) session.Notice {
	var perr *model.Error
	desc := err.Error()
	if errors.As(err, &perr) {
		desc = perr.Display()
	}
	return session.Notice{Severity: session.SeverityError, Title: "The turn failed", Description: model.Cap(desc, model.DisplayCap)}
}
