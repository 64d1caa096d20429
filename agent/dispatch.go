package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// pending is one call of a round on its way to a result.
type pending struct {
	call   model.ToolCall
	tool   tool.Tool // nil when unknown
	spec   tool.Spec
	run    bool // passed every check
	call2  tool.Call
	result session.ToolResult
	notice string // tool.Result.Notice, recorded after the result
	err    error  // infrastructure failure
	// context is what guards add to the result; after the rows they
	// record once the call ran.
	context  []string
	after    []session.Entry
	stopTurn bool
	turn     int64
}

// runTools dispatches a round's calls and reports a stop reason when the
// round ends the turn. The assistant message is stored before any call is
// checked or run, and results are stored as they complete, in call order:
// a crash never leaves an effect whose call is missing from the log.
func (e *Engine) runTools(ctx context.Context, ts *turnState, resp *model.Response) (StopReason, error) {
	if _, err := e.appendRows(ctx, ts.turn, assistantEntry(resp)); err != nil {
		return StopFailed, err
	}
	calls := resp.Message.ToolCalls()
	ps := make([]*pending, len(calls))
	var stop StopReason
	allBookkeeping := true
	for i, c := range calls {
		p := &pending{call: c, turn: ts.turn}
		ps[i] = p
		if len(c.Arguments) == 0 {
			p.call.Arguments = json.RawMessage("{}")
		}
		t, ok := e.opts.Tools.Get(c.Name)
		if ok {
			p.tool, p.spec = t, t.Spec()
		}
		if !p.spec.Bookkeeping {
			allBookkeeping = false
		}
		e.emit(ToolCallStarted{CallID: c.ID, Name: c.Name, Title: e.title(p), Kind: p.spec.Kind,
			Locations: e.locations(p), Arguments: p.call.Arguments})
	}
	// Checks run in call order: an approval is put to a person one at a
	// time, and the repeat guard reads the calls as they were made.
	for _, p := range ps {
		ts.toolCalls++
		switch {
		case stop != "":
			p.result = refused(p, "This call was not run: the turn stopped before it.")
		case ts.toolCalls > e.opts.MaxToolCalls:
			p.result = refused(p, fmt.Sprintf("This call was not run: the turn reached its limit of %d tool calls.", e.opts.MaxToolCalls))
			stop = StopMaxToolCalls
		case p.tool == nil:
			p.result = refused(p, fmt.Sprintf("There is no tool called %q. The tools available are: %s.", p.call.Name, strings.Join(e.opts.Tools.Names(), ", ")))
		default:
			if err := e.opts.Tools.Validate(p.spec.Name, p.call.Arguments); err != nil {
				p.result = refused(p, fmt.Sprintf("%s was not run: %v\nFix the arguments to match the tool's schema and call it again.", p.spec.Name, err))
				break
			}
			if !p.spec.Bookkeeping {
				switch ts.guard.observe(p.call) {
				case repeatWarn:
					p.result = refused(p, fmt.Sprintf("This call was not run: it is the same %s call with the same arguments %d times in a row, and its result will not change. Use the result you already have, or try a different approach. Repeating it again ends the turn.", p.spec.Name, ts.guard.count))
					continue
				case repeatStop:
					p.result = refused(p, "This call was not run: the same call was repeated after a warning, so the turn was stopped.")
					stop = StopRepeat
					continue
				}
			}
			p.call2 = tool.Call{ID: p.call.ID, Name: p.spec.Name, Arguments: p.call.Arguments,
				SessionID: e.opts.SessionID, Cwd: e.opts.Cwd}
			g, err := e.guard(ctx, ts, p)
			if err != nil {
				return StopFailed, err
			}
			if g.StopTurn {
				stop = StopHook
			}
			if g.Refuse != "" {
				p.result = refused(p, g.Refuse)
				break
			}
			if e.opts.Gate != nil {
				var v tool.Verdict
				if g.Ask {
					v = e.opts.Gate.Confirm(ctx, p.tool, p.call2, g.AskReason)
				} else {
					v = e.opts.Gate.Check(ctx, p.tool, p.call2)
				}
				if !v.Allowed {
					p.result = refused(p, v.Reason)
					if ctx.Err() != nil {
						// A cancel ended the question, not the user: the
						// call was cancelled, not denied.
						p.result = canceled(p)
					}
					break
				}
				p.call2.Level = v.Level
			}
			p.run = true
		}
	}

	if err := e.execute(ctx, ts.turn, ps); err != nil {
		return StopFailed, err
	}
	for _, p := range ps {
		ts.usage = ts.usage.Add(p.result.Usage) // a sub-agent's spend is the turn's
	}
	var failure error
	for _, p := range ps {
		if p.err != nil && failure == nil {
			failure = fmt.Errorf("run %s: %w", p.call.Name, p.err)
		}
	}
	if allBookkeeping && stop == "" {
		ts.charged--
	}
	switch {
	case failure != nil:
		e.notice(ctx, ts.turn, failureNotice(failure))
		return StopFailed, failure
	case ctx.Err() != nil:
		return StopCanceled, nil
	case stop == StopRepeat:
		e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning, Title: "Turn stopped: the model repeated the same tool call"})
	case stop == StopMaxToolCalls:
		e.notice(ctx, ts.turn, session.Notice{Severity: session.SeverityWarning, Title: fmt.Sprintf("Turn stopped after %d tool calls (the limit)", e.opts.MaxToolCalls)})
	}
	if stop == "" {
		for _, p := range ps {
			if p.stopTurn {
				stop = StopHook
			}
		}
	}
	return stop, nil
}

// guard asks the guards about a call in turn: the first refusal decides;
// updated arguments replace the call's and are validated again; every
// guard's rows are stored before the call's result.
func (e *Engine) guard(ctx context.Context, ts *turnState, p *pending) (ToolVerdict, error) {
	var out ToolVerdict
	for _, g := range e.opts.Guards {
		v := g.BeforeTool(ctx, ToolInfo{Turn: ts.turn, Call: p.call2, Spec: p.spec})
		if len(v.Entries) > 0 {
			if _, err := e.appendRows(ctx, ts.turn, v.Entries...); err != nil {
				return out, err
			}
			e.emitRecorded(v.Entries)
		}
		if v.Context != "" {
			p.context = append(p.context, v.Context)
		}
		out.StopTurn = out.StopTurn || v.StopTurn
		if v.Ask {
			out.Ask, out.AskReason = true, v.AskReason
		}
		if v.Refuse != "" {
			out.Refuse = v.Refuse
			return out, nil
		}
		if v.StopTurn {
			out.Refuse = "This call was not run: a hook stopped the turn."
			return out, nil
		}
		if len(v.Arguments) > 0 {
			if err := e.opts.Tools.Validate(p.spec.Name, v.Arguments); err != nil {
				out.Refuse = fmt.Sprintf("%s was not run: a hook changed its arguments to ones its schema refuses: %v", p.spec.Name, err)
				return out, nil
			}
			p.call.Arguments, p.call2.Arguments = v.Arguments, v.Arguments
		}
	}
	return out, nil
}

// execute runs the calls that passed their checks: consecutive
// parallel-safe calls together, the others one at a time, in call order.
// Results are stored in call order, and around every call that can have
// effects outside the log: what is known is stored before it runs, its
// result right after. Bookkeeping calls change nothing but the log, so
// their results wait for the next store (one transaction for a round of
// checklist calls, one plan change for front doors).
func (e *Engine) execute(ctx context.Context, turn int64, ps []*pending) error {
	stored := 0
	flush := func(upTo int) error {
		if upTo <= stored {
			return nil
		}
		entries := make([]session.Entry, 0, upTo-stored)
		var notices []session.Notice
		for _, p := range ps[stored:upTo] {
			entries = append(entries, p.result)
			entries = append(entries, p.after...)
			if p.notice != "" {
				notices = append(notices, session.Notice{Severity: session.SeverityInfo, Title: p.notice})
			}
		}
		// After the results: the rows of one round's results stay
		// together.
		for _, n := range notices {
			entries = append(entries, n)
		}
		if _, err := e.appendRows(ctx, turn, entries...); err != nil {
			return err
		}
		for _, p := range ps[stored:upTo] {
			e.emit(ToolCallFinished{CallID: p.call.ID, Result: p.result})
			e.emitRecorded(p.after)
		}
		for _, n := range notices {
			e.emit(Notice{Notice: n})
		}
		stored = upTo
		return nil
	}
	for i := 0; i < len(ps); {
		if !ps[i].run {
			i++
			continue
		}
		j := i + 1
		if ps[i].spec.ParallelSafe {
			for j < len(ps) && (!ps[j].run || ps[j].spec.ParallelSafe) {
				j++
			}
		}
		effects := false
		for _, p := range ps[i:j] {
			effects = effects || (p.run && !p.spec.Bookkeeping)
		}
		if effects {
			if err := flush(i); err != nil {
				return err
			}
		}
		if j == i+1 {
			e.runOne(ctx, ps[i])
		} else {
			var g errgroup.Group
			g.SetLimit(e.opts.MaxParallel)
			for _, p := range ps[i:j] {
				if p.run {
					g.Go(func() error { e.runOne(ctx, p); return nil })
				}
			}
			_ = g.Wait()
		}
		if effects {
			if err := flush(j); err != nil {
				return err
			}
		}
		i = j
	}
	return flush(len(ps))
}

func (e *Engine) runOne(ctx context.Context, p *pending) {
	if ctx.Err() != nil {
		p.result = canceled(p)
		return
	}
	c := p.call2
	c.Output = func(chunk string) { e.emit(ToolCallOutput{CallID: c.ID, Chunk: chunk}) }
	c.Progress = func(lines []string) { e.emit(ToolCallProgress{CallID: c.ID, Lines: lines}) }
	res, err := p.tool.Run(ctx, c)
	switch {
	case ctx.Err() != nil && (err != nil || res.IsError):
		p.result = canceled(p)
		if len(res.Content) > 0 {
			p.result.Content = append(p.result.Content, res.Content...)
		}
		p.result.Usage = res.Usage
		// What the call recorded as it stopped (the signal that ended a
		// command) is kept for front doors; folds take only StatusOK.
		p.result.State = res.State
	case errors.Is(err, tool.ErrUnavailable):
		// Not meka's failure: the model hears it and can do without.
		p.result = session.ToolResult{CallID: c.ID, Name: c.Name, Status: session.StatusError,
			Content: model.Parts{model.Text{Text: err.Error()}}}
	case err != nil:
		p.err = err
		p.result = session.ToolResult{CallID: c.ID, Name: c.Name, Status: session.StatusError,
			Content: model.Parts{model.Text{Text: "The tool failed inside meka: " + err.Error()}}}
	default:
		status := session.StatusOK
		if res.IsError {
			status = session.StatusError
		}
		p.result = session.ToolResult{CallID: c.ID, Name: c.Name, Status: status,
			Content: res.Content, Change: res.Change, State: res.State, Usage: res.Usage}
		p.notice = res.Notice
	}
	if ctx.Err() == nil && p.err == nil {
		for _, g := range e.opts.Guards {
			v := g.AfterTool(ctx, ToolInfo{Turn: p.turn, Call: c, Spec: p.spec}, p.result)
			if v.Context != "" {
				p.context = append(p.context, v.Context)
			}
			p.stopTurn = p.stopTurn || v.StopTurn
			p.after = append(p.after, v.Entries...)
		}
	}
	for _, t := range p.context {
		p.result.Content = append(p.result.Content, model.Text{Text: t})
	}
}

func (e *Engine) title(p *pending) string {
	if p.tool == nil {
		return p.call.Name
	}
	return tool.Title(p.tool, p.call.Arguments)
}

func (e *Engine) locations(p *pending) []tool.Location {
	if p.tool == nil {
		return nil
	}
	return tool.Locations(p.tool, p.call.Arguments, e.opts.Cwd)
}

func refused(p *pending, msg string) session.ToolResult {
	return session.ToolResult{CallID: p.call.ID, Name: p.call.Name, Status: session.StatusRefused,
		Content: model.Parts{model.Text{Text: msg}}}
}

func canceled(p *pending) session.ToolResult {
	return session.ToolResult{CallID: p.call.ID, Name: p.call.Name, Status: session.StatusCanceled,
		Content: model.Parts{model.Text{Text: "This call was canceled before it finished."}}}
}
