package checklist

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// FoldName keys the checklist's state in a compaction checkpoint.
const FoldName = "checklist"

// Fold derives the checklist from a session's log: the accepted
// checklist_add and checklist_edit calls, applied from their arguments,
// and task reports, which reopen the items deferred on the tasks they
// report. Refused and failed calls change nothing.
//
// It is safe for concurrent use: the engine folds rows from the turn's
// goroutine while the checklist tools read the list.
type Fold struct {
	enabled func() bool

	mu sync.Mutex // guards the fields below
	// st is the list as the log adds it up.
	st state
	// unfolded are the calls the tools accepted whose results the engine
	// has not yet appended: the results of a round are appended together
	// after it, so a second checklist call in one round computes from st
	// with the first applied.
	unfolded []unfoldedCall
	// dirty is set when a live change has not been taken as an event.
	dirty bool
}

type unfoldedCall struct {
	id   string
	name string
	args json.RawMessage
}

var _ agent.EventFold = (*Fold)(nil)

// Name returns FoldName.
func (f *Fold) Name() string { return FoldName }

// Reset empties the list.
func (f *Fold) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.unfolded, f.dirty = state{}, nil, false
}

// Restore sets the list recorded on a compaction boundary.
func (f *Fold) Restore(raw json.RawMessage) error {
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("restore checklist: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.unfolded, f.dirty = st, nil, false
	return nil
}

// Checkpoint records the list and its id counter.
func (f *Fold) Checkpoint() (json.RawMessage, error) {
	f.mu.Lock()
	st := f.st.clone()
	f.mu.Unlock()
	if st.Items == nil {
		st.Items = []plan.Item{}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("checkpoint checklist: %w", err)
	}
	return b, nil
}

// Apply folds one row in.
func (f *Fold) Apply(s session.Step) {
	switch e := s.Entry.(type) {
	case session.ToolResult:
		f.mu.Lock()
		defer f.mu.Unlock()
		f.unfolded = slices.DeleteFunc(f.unfolded, func(c unfoldedCall) bool { return c.id == e.CallID })
		if !e.Accepted() || s.Call.Name != e.Name {
			return
		}
		if st, ok := applyCall(f.st, e.Name, s.Call.Arguments); ok {
			f.st, f.dirty = st, true
		}
	case session.UserMessage:
		// A new turn: calls of a round whose rows never reached the log
		// (the append failed and ended the turn) are no longer on their way.
		f.mu.Lock()
		f.unfolded = nil
		f.mu.Unlock()
		if len(e.Reopen) > 0 && e.Source != session.SourceTask {
			f.mu.Lock()
			defer f.mu.Unlock()
			if st, ok := f.st.pickUp(e.Reopen); ok {
				f.st, f.dirty = st, true
			}
			return
		}
		if e.Source != session.SourceTask {
			return
		}
		tasks := ReportedTasks(e)
		if len(tasks) == 0 {
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if st, ok := f.st.reopen(tasks); ok {
			f.st, f.dirty = st, true
		}
	}
}

// applyCall is the transition an accepted call made, recomputed from its
// arguments; ok is false for a call that changes nothing.
func applyCall(st state, name string, args json.RawMessage) (state, bool) {
	switch name {
	case addName:
		a, err := parseAdd(args)
		if err != nil {
			return st, false
		}
		next, _, err := st.add(a)
		return next, err == nil
	case editName:
		a, err := parseEdit(args)
		if err != nil {
			return st, false
		}
		next, _, err := st.edit(a)
		return next, err == nil
	}
	return st, false
}

// TakeEvent returns a plan.Changed after a live change. The engine
// discards what replay leaves here before its first turn.
func (f *Fold) TakeEvent() (agent.Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty {
		return nil, false
	}
	f.dirty = false
	if !f.on() {
		return nil, false
	}
	return changed(f.st), true
}

// Snapshot returns the list as it stands.
func (f *Fold) Snapshot() (plan.Changed, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on() {
		return plan.Changed{}, false
	}
	return changed(f.st), true
}

var _ plan.Snapshotter = (*Fold)(nil)

func changed(st state) plan.Changed {
	items := slices.Clone(st.Items)
	if items == nil {
		items = []plan.Item{}
	}
	return plan.Changed{Dialect: FoldName, Items: items, Completed: st.Completed, Total: st.Added}
}

func (f *Fold) on() bool { return f.enabled == nil || f.enabled() }

// state returns a copy of the list as the log adds it up.
func (f *Fold) state() state {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.clone()
}

// head returns the list with the calls the tools accepted and the engine
// has not yet folded applied, as the next tool call must see it. Callers
// hold mu.
func (f *Fold) head() state {
	st := f.st.shared()
	for _, c := range f.unfolded {
		st, _ = applyCall(st, c.name, c.args)
	}
	return st.shared()
}

// Items returns the items on the list, in order; none when the feature is
// filtered out.
func (f *Fold) Items() []plan.Item {
	if !f.on() {
		return nil
	}
	return f.state().Items
}

// ReportedTasks returns the background tasks a task report message
// delivers, as the host names them in session.UserMessage.Tasks; nil for
// any other message.
func ReportedTasks(m session.UserMessage) []string {
	if m.Source != session.SourceTask {
		return nil
	}
	return m.Tasks
}
