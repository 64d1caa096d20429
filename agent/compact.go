package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// ErrNothingToCompact is returned by Compact when every row is part of
// the most recent turn, which compaction always keeps.
var ErrNothingToCompact = errors.New("nothing to compact: only the current turn is in the context")

const compactSystem = `You are summarizing a conversation between a user and a coding agent so the agent can continue the work with only your summary and the most recent messages.`

const compactInstruction = `Summarize the conversation above for the agent that will continue it. Keep: the user's goals and constraints in their own words; decisions made and why; files read, created or changed, with what changed; commands run and what they showed; errors met and how they were resolved; what remains to be done. Be specific (paths, names, numbers). Do not invent anything. Reply with the summary only.`

// Compact summarizes the turns before the most recent one now. It fails
// with ErrBusy while a turn runs (the turn compacts by itself when it must).
// A compaction that fails or is canceled leaves the log as it was.
func (e *Engine) Compact(ctx context.Context) error { return e.CompactFocus(ctx, "") }

// CompactFocus is Compact with what the person wants the summary to keep
// in particular (/compact focus); an empty focus is Compact.
func (e *Engine) CompactFocus(ctx context.Context, focus string) error {
	if !e.running.TryLock() {
		return ErrBusy
	}
	defer e.running.Unlock()
	e.mu.Lock()
	turn := session.LastTurn(e.rows)
	e.mu.Unlock()
	u, err := e.compact(ctx, turn, "manual", strings.TrimSpace(focus))
	if err == nil {
		e.emit(Usage{Round: u, Turn: u, ContextTokens: e.viewTokens(), Window: e.opts.ContextWindow})
	}
	return err
}

// maybeCompact compacts when the next request would pass CompactAt of the
// context window. It returns what the compaction's model call spent, which
// is the turn's, and whether the conversation was compacted.
func (e *Engine) maybeCompact(ctx context.Context, turn int64) (model.Usage, bool, error) {
	if e.opts.ContextWindow <= 0 {
		return model.Usage{}, false, nil
	}
	estimate := e.contextEstimate()
	if float64(estimate) < e.opts.CompactAt*float64(e.opts.ContextWindow) {
		return model.Usage{}, false, nil
	}
	u, err := e.compact(ctx, turn, "auto", "")
	if errors.Is(err, ErrNothingToCompact) {
		return u, false, nil
	}
	return u, err == nil, err
}

// contextEstimate is how full the window is before the next request: the
// last reply's measure and what was added since, four bytes to a token;
// the view's size before any reply measured it.
func (e *Engine) contextEstimate() int {
	e.mu.Lock()
	last, added := e.lastCtx, e.addedLen
	e.mu.Unlock()
	if last == 0 {
		return e.viewTokens()
	}
	return last + added/4
}

// viewTokens estimates the tokens of the conversation as the next request
// will carry it, four bytes to a token: the gauge after a compaction,
// before a reply has measured it.
func (e *Engine) viewTokens() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, m := range e.view {
		n += messageSize(m)
	}
	return n / 4
}

// compact summarizes the turns before turn and returns what its model call
// spent, whether or not it succeeded.
func (e *Engine) compact(ctx context.Context, turn int64, trigger, focus string) (model.Usage, error) {
	e.mu.Lock()
	rows := append([]session.Row(nil), e.rows...)
	e.mu.Unlock()

	keep := len(rows)
	for i, r := range rows {
		if r.Turn == turn {
			keep = i
			break
		}
	}
	prevKept := int64(0)
	if i := session.LatestCompaction(rows); i >= 0 {
		prevKept = rows[i].Entry.(session.Compaction).KeptFrom
	}
	if keep == len(rows) || keep == 0 || rows[keep].Seq <= prevKept {
		return model.Usage{}, ErrNothingToCompact
	}
	keptFrom := rows[keep].Seq
	facts := Compacted{KeptFrom: keptFrom, Trigger: trigger, Focus: focus, TokensBefore: e.contextEstimate()}
	turns, dropped := map[int64]bool{}, map[int64]bool{}
	for i, r := range rows {
		switch {
		case i >= keep:
			turns[r.Turn] = true
		case r.Seq >= prevKept:
			facts.RowsSummarized++
			countDropped(&facts.Dropped, r, dropped)
		}
	}
	facts.KeptTurns = len(turns)
	facts.Dropped.Turns = len(dropped)

	e.emit(CompactionStarted{Trigger: trigger, Focus: focus, TokensBefore: facts.TokensBefore})
	u, err := e.summarize(ctx, turn, rows[:keep], facts)
	if err != nil {
		e.emit(CompactionFailed{Err: err, Canceled: ctx.Err() != nil})
	}
	return u, err
}

// summarize asks the model for a summary of rows and stores the boundary.
// It returns what the model call spent.
func (e *Engine) summarize(ctx context.Context, turn int64, rows []session.Row, facts Compacted) (model.Usage, error) {
	keptFrom := facts.KeptFrom
	msgs := BuildView(rows)
	instruction := compactInstruction
	if facts.Focus != "" {
		instruction += "\n\nThe person asked the summary to keep in particular: " + facts.Focus
	}
	msgs = append(msgs, model.Message{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: instruction}}})
	resp, err := model.Collect(e.opts.Provider.Stream(ctx, &model.Request{
		System: compactSystem, Messages: msgs, MaxOutputTokens: e.opts.MaxOutputTokens,
	}), nil)
	if err != nil {
		return model.Usage{}, fmt.Errorf("compact: %w", err)
	}
	spent := resp.Usage
	summary := strings.TrimSpace(resp.Message.Text())
	if summary == "" {
		return spent, errors.New("compact: the model returned an empty summary")
	}
	for _, c := range e.opts.Compactors {
		if text := c.CompactionText(ctx); text != "" {
			summary += "\n\n" + text
		}
	}
	checkpoint, err := e.folder.Checkpoint()
	if err != nil {
		return spent, fmt.Errorf("compact: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return spent, fmt.Errorf("compact: %w", err)
	}
	if _, err := e.appendRows(ctx, turn, session.Compaction{Summary: summary, KeptFrom: keptFrom, Checkpoint: checkpoint,
		Trigger: facts.Trigger, Focus: facts.Focus, Dropped: &facts.Dropped}); err != nil {
		return spent, fmt.Errorf("compact: %w", err)
	}
	facts.Summary, facts.Usage, facts.TokensAfter, facts.Checkpoint = summary, spent, e.viewTokens(), checkpoint
	e.emit(facts)
	return spent, nil
}

// countDropped adds one summarized row to what a compaction dropped;
// turns collects the turns seen.
func countDropped(d *session.Dropped, r session.Row, turns map[int64]bool) {
	switch en := r.Entry.(type) {
	case session.UserMessage:
		turns[r.Turn] = true
		d.Messages++
		d.Bytes += messageSize(model.Message{Parts: en.ModelParts()})
	case session.AssistantMessage:
		d.Messages++
		d.Bytes += messageSize(model.Message{Parts: en.Parts})
	case session.ToolResult:
		n := messageSize(model.Message{Parts: model.Parts{model.ToolResult{Content: en.Content}}})
		d.ToolOutputs++
		d.ToolOutputBytes += n
		d.Bytes += n
	}
}
