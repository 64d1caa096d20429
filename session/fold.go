package session

import (
	"encoding/json"
	"fmt"

	"meka.dev/meka/model"
)

// Fold derives one piece of state from a session's rows. A fold never
// reads anything but the rows it is given, so replaying the log rebuilds
// exactly the state a live session had.
type Fold interface {
	// Name keys the fold's state in a compaction checkpoint.
	Name() string
	// Reset returns the fold to the state of an empty session.
	Reset()
	// Restore sets the state recorded by Checkpoint.
	Restore(state json.RawMessage) error
	// Checkpoint records the state for a compaction boundary.
	Checkpoint() (json.RawMessage, error)
	// Apply folds one row in.
	Apply(s Step)
}

// Step is a row as a fold sees it: a ToolResult comes with the call it
// answers, found in the assistant message that made it.
type Step struct {
	Row
	// Call is the call a ToolResult row answers; zero for other rows and
	// for a result whose call is not in the log.
	Call model.ToolCall
}

// Folder feeds rows to a set of folds, pairing each tool result with its
// call. The zero value is not usable; use NewFolder.
type Folder struct {
	folds []Fold
	calls map[string]model.ToolCall
}

// NewFolder returns a Folder over folds, each reset.
func NewFolder(folds ...Fold) *Folder {
	f := &Folder{folds: folds, calls: make(map[string]model.ToolCall)}
	for _, fd := range folds {
		fd.Reset()
	}
	return f
}

// Replay rebuilds every fold from a whole session log: it restores the
// checkpoint of the latest compaction and applies the rows after it.
func (f *Folder) Replay(rows []Row) error {
	start := 0
	for _, fd := range f.folds {
		fd.Reset()
	}
	clear(f.calls)
	if i := LatestCompaction(rows); i >= 0 {
		c := rows[i].Entry.(Compaction)
		for _, fd := range f.folds {
			if st, ok := c.Checkpoint[fd.Name()]; ok {
				if err := fd.Restore(st); err != nil {
					return fmt.Errorf("restore %s from compaction at seq %d: %w", fd.Name(), rows[i].Seq, err)
				}
			}
		}
		start = i + 1
	}
	f.Apply(rows[start:]...)
	return nil
}

// Apply folds rows appended after those already seen.
func (f *Folder) Apply(rows ...Row) {
	for _, r := range rows {
		st := Step{Row: r}
		switch e := r.Entry.(type) {
		case AssistantMessage:
			for _, p := range e.Parts {
				if c, ok := p.(model.ToolCall); ok {
					f.calls[c.ID] = c
				}
			}
		case ToolResult:
			st.Call = f.calls[e.CallID]
			delete(f.calls, e.CallID)
		case Compaction:
			// A boundary records state; it changes none.
			continue
		}
		for _, fd := range f.folds {
			fd.Apply(st)
		}
	}
}

// Checkpoint records every fold's state.
func (f *Folder) Checkpoint() (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(f.folds))
	for _, fd := range f.folds {
		st, err := fd.Checkpoint()
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", fd.Name(), err)
		}
		out[fd.Name()] = st
	}
	return out, nil
}

// LatestCompaction returns the index of the last compaction row, or -1.
func LatestCompaction(rows []Row) int {
	for i := len(rows) - 1; i >= 0; i-- {
		if _, ok := rows[i].Entry.(Compaction); ok {
			return i
		}
	}
	return -1
}

// Spent adds up what the model calls rows record spent: the session's
// replies and its sub-agents' turns (a tool result's usage).
func Spent(rows []Row) model.Usage {
	var u model.Usage
	for _, r := range rows {
		switch en := r.Entry.(type) {
		case AssistantMessage:
			u = u.Add(en.Usage)
		case ToolResult:
			u = u.Add(en.Usage)
		}
	}
	return u
}

// LastTurn returns the highest turn number in rows, 0 for none.
func LastTurn(rows []Row) int64 {
	var t int64
	for _, r := range rows {
		t = max(t, r.Turn)
	}
	return t
}
