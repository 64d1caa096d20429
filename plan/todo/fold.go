package todo

import (
	"encoding/json"
	"fmt"
	"slices"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// FoldName keys the plan in a compaction checkpoint and names the dialect
// in plan.Changed.
const FoldName = "update_plan"

// Fold derives the plan from the session's log into its store: each
// accepted update_plan or patch_plan call (session.StatusOK) replaces the
// plan with the one its result recorded, in log order; requested, refused,
// failed or canceled calls change nothing. A result without a recorded
// plan is recomputed from its call's arguments. User messages, a user's
// cancel and anything else leave the plan as it is.
//
// After a live change it reports a plan.Changed; the engine discards what
// replay leaves before its first turn.
type Fold struct {
	store *Store
	// from is Plugin.FromTurn.
	from int64

	// dirty is set when a live change has not been taken as an event;
	// guarded by store.mu.
	dirty bool
}

var _ agent.EventFold = (*Fold)(nil)

// Name returns FoldName.
func (f *Fold) Name() string { return FoldName }

// Reset returns the store to the plan of an empty session: empty, or the
// checkpoint the store was restored from.
func (f *Fold) Reset() {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur, s.turn, s.pending, f.dirty = s.base.clone(), 0, nil, false
}

// Restore sets the plan recorded on a compaction boundary. A forked
// session ignores a checkpoint taken before its own first turn: that plan
// is its parent's.
func (f *Fold) Restore(raw json.RawMessage) error {
	st, turn, err := decodeState(raw)
	if err != nil {
		return fmt.Errorf("restore plan: %w", err)
	}
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, f.dirty = nil, false
	s.turn = turn
	if f.from > 0 && turn < f.from {
		s.cur = s.base.clone()
		return nil
	}
	s.cur = st
	return nil
}

// Checkpoint records the plan and the last turn folded in.
func (f *Fold) Checkpoint() (json.RawMessage, error) {
	return f.store.Checkpoint(), nil
}

// Apply folds one row in.
func (f *Fold) Apply(st session.Step) {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn = max(s.turn, st.Turn)
	e, ok := st.Entry.(session.ToolResult)
	if !ok {
		// The round that ran the pending calls is over once its assistant
		// message is stored; a turn that failed before storing it left
		// outcomes nothing will claim.
		s.pending = nil
		return
	}
	if e.Name != UpdateName && e.Name != PatchName {
		return
	}
	s.pending = slices.DeleteFunc(s.pending, func(o outcome) bool { return o.callID == e.CallID })
	if !e.Accepted() || (f.from > 0 && st.Turn < f.from) {
		return
	}
	next, ok := adopt(s.cur, e, st.Call)
	if !ok {
		return
	}
	s.cur, f.dirty = next, true
}

// adopt returns the plan an accepted result leaves: the one it recorded,
// or, for a result that recorded none, its call recomputed from the
// arguments on the plan before it.
func adopt(cur state, e session.ToolResult, call model.ToolCall) (state, bool) {
	if len(e.State) > 0 {
		if st, _, err := decodeState(e.State); err == nil {
			return st, true
		}
	}
	if call.Name != e.Name {
		return cur, false
	}
	next, err := cur.apply(e.Name, call.Arguments)
	return next, err == nil
}

// TakeEvent returns a plan.Changed after a live change.
func (f *Fold) TakeEvent() (agent.Event, bool) {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	if !f.dirty {
		return nil, false
	}
	f.dirty = false
	return changed(s.cur), true
}

// Snapshot returns the plan as it stands.
func (f *Fold) Snapshot() (plan.Changed, bool) {
	s := f.store
	s.mu.Lock()
	defer s.mu.Unlock()
	return changed(s.cur), true
}

var _ plan.Snapshotter = (*Fold)(nil)

func changed(st state) plan.Changed {
	items := slices.Clone(st.Items)
	if items == nil {
		items = []plan.Item{}
	}
	return plan.Changed{Dialect: FoldName, Items: items, Completed: st.completed(),
		Total: st.Retired + len(st.Items), Retired: st.Retired}
}
