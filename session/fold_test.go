package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// countFold counts the tool results it sees, keeping the name of each
// result's call; its checkpoint is the count alone.
type countFold struct {
	n     int
	calls []string
	// restoreErr, when set, makes Restore fail.
	restoreErr error
}

func (c *countFold) Name() string { return "count" }
func (c *countFold) Reset()       { c.n, c.calls = 0, nil }
func (c *countFold) Restore(st json.RawMessage) error {
	if c.restoreErr != nil {
		return c.restoreErr
	}
	return json.Unmarshal(st, &c.n)
}
func (c *countFold) Checkpoint() (json.RawMessage, error) { return json.Marshal(c.n) }
func (c *countFold) Apply(s session.Step) {
	if _, ok := s.Entry.(session.ToolResult); ok {
		c.n++
		c.calls = append(c.calls, s.Call.Name)
	}
}

func call(seq int64, id, name string) session.Row {
	return session.Row{Seq: seq, Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: id, Name: name}}}}
}

func result(seq int64, id string) session.Row {
	return session.Row{Seq: seq, Turn: 1, Entry: session.ToolResult{CallID: id, Status: session.StatusOK}}
}

// Replay starts from the latest compaction's checkpoint and applies only
// the rows after it, each result paired with its call.
func TestReplayRestoresTheLatestCheckpoint(t *testing.T) {
	rows := []session.Row{
		call(1, "a", "first"), result(2, "a"),
		{Seq: 3, Turn: 1, Entry: session.Compaction{Summary: "s1", Checkpoint: map[string]json.RawMessage{"count": json.RawMessage(`10`)}}},
		call(4, "b", "second"), result(5, "b"),
		{Seq: 6, Turn: 2, Entry: session.Compaction{Summary: "s2", Checkpoint: map[string]json.RawMessage{"count": json.RawMessage(`20`)}}},
		call(7, "c", "third"), result(8, "c"), result(9, "orphan"),
	}
	fd := &countFold{}
	f := session.NewFolder(fd)
	if err := f.Replay(rows); err != nil {
		t.Fatal(err)
	}
	if fd.n != 22 || strings.Join(fd.calls, ",") != "third," {
		t.Errorf("after replay: count %d, calls %q; want 22 and [third \"\"]", fd.n, fd.calls)
	}
	// Replaying again starts over: nothing is counted twice.
	if err := f.Replay(rows[:2]); err != nil {
		t.Fatal(err)
	}
	if fd.n != 1 || strings.Join(fd.calls, ",") != "first" {
		t.Errorf("after a second replay: count %d, calls %q", fd.n, fd.calls)
	}
	cp, err := f.Checkpoint()
	if err != nil || string(cp["count"]) != "1" {
		t.Errorf("Checkpoint() = %s, %v", cp, err)
	}
}

// A checkpoint a fold cannot restore fails the replay, naming the fold and
// the compaction's row: folding on from an empty state would rebuild the
// wrong state silently.
func TestReplayFailsOnAnUnrestorableCheckpoint(t *testing.T) {
	broken := errors.New("state from a newer meka")
	fd := &countFold{restoreErr: broken}
	rows := []session.Row{
		{Seq: 7, Turn: 1, Entry: session.Compaction{Summary: "s", Checkpoint: map[string]json.RawMessage{"count": json.RawMessage(`{"v":2}`)}}},
		call(8, "c", "x"), result(9, "c"),
	}
	err := session.NewFolder(fd).Replay(rows)
	if !errors.Is(err, broken) {
		t.Fatalf("Replay = %v, want the restore error", err)
	}
	if want := fmt.Sprintf("restore count from compaction at seq %d", 7); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if fd.n != 0 {
		t.Errorf("rows after the checkpoint were folded (%d) although it failed", fd.n)
	}
	// A checkpoint without the fold's state leaves it to the rows after.
	fd.restoreErr = nil
	rows[0].Entry = session.Compaction{Summary: "s"}
	if err := session.NewFolder(fd).Replay(rows); err != nil || fd.n != 1 {
		t.Errorf("replay without the fold's state: count %d, %v", fd.n, err)
	}
}
