package todo

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"meka.dev/meka/plan"
)

// Bounds on a plan. They keep the reminder, pinned into every request,
// from growing with the length of the run.
const (
	// MaxItems is how many steps a call may leave in the plan.
	MaxItems = 128
	// MaxOps is how many operations one patch_plan call may carry.
	MaxOps = 128
	// MaxStepBytes is where a step's text is clamped.
	MaxStepBytes = 160
	// MaxIDBytes bounds a step's id.
	MaxIDBytes = 64
	// MaxPhaseBytes bounds a step's phase.
	MaxPhaseBytes = 160
	// KeepCompleted is how many completed steps stay on the list; older
	// ones are folded into the retired count.
	KeepCompleted = 5
)

// state is a plan as the store holds it: the steps on the list and how
// many completed steps were folded off it.
type state struct {
	Items   []plan.Item `json:"items"`
	Retired int         `json:"retired"`
}

func (st state) clone() state {
	return state{Items: slices.Clone(st.Items), Retired: st.Retired}
}

// completed counts the plan's completed steps, folded ones included.
func (st state) completed() int {
	n := st.Retired
	for _, it := range st.Items {
		if it.Status == plan.Completed {
			n++
		}
	}
	return n
}

// open returns the steps that hold a turn open.
func (st state) open() []plan.Item { return plan.OpenItems(st.Items) }

// fold moves completed steps beyond the most recent KeepCompleted into
// the retired count. Recent means last in list order: a plan is worked
// front to back, so the last completed steps are the latest.
func (st state) fold() state {
	n := 0
	for _, it := range st.Items {
		if it.Status == plan.Completed {
			n++
		}
	}
	drop := n - KeepCompleted
	if drop <= 0 {
		return st
	}
	out := make([]plan.Item, 0, len(st.Items)-drop)
	for _, it := range st.Items {
		if it.Status == plan.Completed && drop > 0 {
			drop--
			st.Retired++
			continue
		}
		out = append(out, it)
	}
	st.Items = out
	return st
}

// checkpoint is the state as Store.Checkpoint records it. Turn is the
// last turn folded in, so a forked session can tell its own checkpoints
// from those it copied.
type checkpoint struct {
	Items   []plan.Item `json:"items"`
	Retired int         `json:"retired"`
	Turn    int64       `json:"turn,omitempty"`
}

func encodeState(st state, turn int64) json.RawMessage {
	items := st.Items
	if items == nil {
		items = []plan.Item{}
	}
	b, err := json.Marshal(checkpoint{Items: items, Retired: st.Retired, Turn: turn})
	if err != nil {
		// plan.Item holds strings only; Marshal cannot fail.
		panic(fmt.Sprintf("encode plan: %v", err))
	}
	return b
}

// decodeState reads a recorded plan, normalizing what it holds so a
// hand-written or older checkpoint still renders within bounds.
func decodeState(raw json.RawMessage) (state, int64, error) {
	var c checkpoint
	if err := json.Unmarshal(raw, &c); err != nil {
		return state{}, 0, err
	}
	if c.Retired < 0 {
		return state{}, 0, fmt.Errorf("negative retired count %d", c.Retired)
	}
	items := make([]plan.Item, 0, len(c.Items))
	for i, it := range c.Items {
		switch it.Status {
		case plan.Pending, plan.InProgress, plan.Completed, plan.Blocked, plan.Abandoned:
		default:
			return state{}, 0, fmt.Errorf("step %d has status %q", i+1, it.Status)
		}
		items = append(items, plan.Item{ID: plan.Clamp(it.ID, MaxIDBytes), Text: plan.Clamp(plan.OneLine(it.Text), MaxStepBytes),
			Status: it.Status, Phase: plan.Clamp(plan.OneLine(it.Phase), MaxPhaseBytes)})
	}
	return state{Items: items, Retired: c.Retired}, c.Turn, nil
}

// Store holds one run's plan. The update_plan and patch_plan tools compute
// from it without changing it; the fold (Plugin.Fold) applies the calls
// the session accepted, so the store always holds what the log adds up
// to. A store belongs to one session: a sub-agent or a fork gets its own.
//
// It is safe for concurrent use.
type Store struct {
	mu sync.Mutex // guards the fields below
	// base is the plan of an empty session: empty, or a restored
	// checkpoint.
	base state
	// cur is the plan as the folded log adds it up.
	cur state
	// turn is the last turn folded in.
	turn int64
	// pending are the outcomes of calls that ran this round and whose
	// results the engine has not yet appended: a round's results are
	// appended together after it, so a second plan call in one round
	// must compute from the first's outcome.
	pending []outcome
}

type outcome struct {
	callID string
	st     state
}

// NewStore returns an empty store; use one per session.
func NewStore() *Store { return &Store{} }

// Restore returns a store holding a plan recorded by Store.Checkpoint, for
// a fresh agent to continue: it is the plan the store starts from and
// returns to when the session's log is replayed from empty.
func Restore(raw json.RawMessage) (*Store, error) {
	st, _, err := decodeState(raw)
	if err != nil {
		return nil, fmt.Errorf("restore plan: %w", err)
	}
	return &Store{base: st.clone(), cur: st}, nil
}

// Checkpoint records the plan: its steps, their statuses and the retired
// count. Restore turns it back into a store.
func (s *Store) Checkpoint() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return encodeState(s.cur, s.turn)
}

// Items returns the steps on the list, in order.
func (s *Store) Items() []plan.Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cur.Items)
}

// Retired returns how many completed steps were folded off the list. It
// is a floor: a step is counted only once it is folded.
func (s *Store) Retired() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.Retired
}

func (s *Store) state() state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.clone()
}

// head returns the plan the next call computes from: the folded plan, or
// the outcome of the last call of this round. Callers hold mu.
func (s *Store) head() state {
	if n := len(s.pending); n > 0 {
		return s.pending[n-1].st
	}
	return s.cur
}
