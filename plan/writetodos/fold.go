package writetodos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// Fold derives the list from the session's log: each accepted write_todos
// call (session.StatusOK) sets the list its result recorded, in log order;
// requested, refused, failed or canceled calls change nothing. Results of
// the older format, without a recorded list, are rebuilt (see legacy.go).
// A user's message starting a turn marks the list stale and changes no
// item.
//
// After a live change it reports a plan.Changed; the engine discards what
// replay leaves before its first turn.
type Fold struct{ p *Plugin }

var _ agent.EventFold = (*Fold)(nil)

// Name returns Name.
func (f *Fold) Name() string { return Name }

// Reset empties the list.
func (f *Fold) Reset() {
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st, p.pending, p.dirty = state{}, nil, false
}

// Restore sets the list recorded on a compaction boundary.
func (f *Fold) Restore(raw json.RawMessage) error {
	st, err := decodeState(raw)
	if err != nil {
		return fmt.Errorf("restore todos: %w", err)
	}
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.st, p.pending, p.dirty = st, nil, false
	return nil
}

// Checkpoint records the list, its ids and timestamps, and staleness.
func (f *Fold) Checkpoint() (json.RawMessage, error) {
	return encodeState(f.p.state()), nil
}

// Apply folds one row in.
func (f *Fold) Apply(s session.Step) {
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := s.Entry.(type) {
	case session.UserMessage:
		p.pending = nil
		if (e.Source == session.SourceUser || e.Source == session.SourceSchedule) && len(p.st.Items) > 0 && !p.st.Stale {
			p.st.Stale, p.dirty = true, true
		}
	case session.AssistantMessage:
		// The round that ran the pending calls is over once its assistant
		// message is stored.
		p.pending = nil
	case session.ToolResult:
		if e.Name != Name {
			return
		}
		p.pending = slices.DeleteFunc(p.pending, func(o outcome) bool { return o.callID == e.CallID })
		if !e.Accepted() {
			return
		}
		if next, ok := adopt(p.st, e, s); ok {
			next.Stale = false
			p.st, p.dirty = next, true
		}
	}
}

// adopt returns the list an accepted result leaves: the one it recorded,
// or, for an older result, its call's arguments replayed, or its rendered
// list parsed back.
func adopt(cur state, e session.ToolResult, s session.Step) (state, bool) {
	if len(e.State) > 0 {
		if st, err := decodeState(e.State); err == nil {
			return st, true
		}
	}
	if s.Call.Name == e.Name {
		if a, err := parseArgs(s.Call.Arguments); err == nil {
			if next, ok := cur.legacyApply(a, s.Time); ok {
				return next, true
			}
		}
	}
	return cur.parseRendered(resultText(e.Content), s.Time)
}

func resultText(parts model.Parts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TakeEvent returns a plan.Changed after a live change.
func (f *Fold) TakeEvent() (agent.Event, bool) {
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.dirty {
		return nil, false
	}
	p.dirty = false
	return changed(p.st), true
}

// Snapshot returns the list as it stands.
func (f *Fold) Snapshot() (plan.Changed, bool) {
	p := f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return changed(p.st), true
}

var _ plan.Snapshotter = (*Fold)(nil)

func changed(st state) plan.Changed {
	items := make([]plan.Item, len(st.Items))
	done := 0
	for i, t := range st.Items {
		items[i] = t.Item()
		if t.Status == plan.Completed {
			done++
		}
	}
	return plan.Changed{Dialect: Name, Items: items, Completed: done, Total: len(items), Stale: st.Stale}
}
