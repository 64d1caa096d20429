package checklist_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
)

// benchRows builds a 2,000-row session with 300 checklist calls among
// ordinary conversation and tool traffic.
func benchRows() []session.Row {
	var rows []session.Row
	seq := int64(0)
	push := func(turn int64, e session.Entry) {
		seq++
		rows = append(rows, session.Row{Seq: seq, Turn: turn, Entry: e})
	}
	output := strings.Repeat("some output line\n", 40)
	checklistCalls, added := 0, 0
	for turn := int64(1); len(rows) < 2000; turn++ {
		push(turn, session.UserMessage{Parts: model.Parts{model.Text{Text: "Please carry on with the next part of the work."}}})
		for round := 0; round < 4 && len(rows) < 1998; round++ {
			id := fmt.Sprintf("t%d-%d", turn, round)
			var c model.ToolCall
			switch {
			case checklistCalls < 300 && round%2 == 0 && (added < 2 || checklistCalls%3 == 0):
				c = model.ToolCall{ID: id, Name: "checklist_add", Arguments: json.RawMessage(`{"items":["Write the next function",{"text":"Test it","status":"in_progress"}]}`)}
				added += 2
				checklistCalls++
			case checklistCalls < 300 && round%2 == 0:
				args := fmt.Sprintf(`{"id":"c%d","status":"completed"}`, added-1)
				if checklistCalls%3 == 1 {
					args = fmt.Sprintf(`{"id":"c%d","status":"deferred","reason":"waits on the user's review"}`, added)
				}
				c = model.ToolCall{ID: id, Name: "checklist_edit", Arguments: json.RawMessage(args)}
				checklistCalls++
			default:
				c = model.ToolCall{ID: id, Name: "shell", Arguments: json.RawMessage(`{"command":"go test ./..."}`)}
			}
			push(turn, session.AssistantMessage{Parts: model.Parts{model.Text{Text: "Working on it."}, c}})
			push(turn, session.ToolResult{CallID: id, Name: c.Name, Status: session.StatusOK, Content: model.Parts{model.Text{Text: output}}})
		}
		push(turn, session.AssistantMessage{Parts: model.Parts{model.Text{Text: "Done with this part."}}})
	}
	return rows
}

func TestBenchRows(t *testing.T) {
	rows := benchRows()
	n := 0
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok && strings.HasPrefix(tr.Name, "checklist_") {
			n++
		}
	}
	if len(rows) != 2000 || n != 300 {
		t.Fatalf("%d rows, %d checklist calls", len(rows), n)
	}
	p := checklist.New(checklist.Options{})
	if err := session.NewFolder(p.Fold()).Replay(rows); err != nil {
		t.Fatal(err)
	}
	if len(p.Items()) == 0 {
		t.Fatal("the benchmark session folds to an empty list")
	}
}

func BenchmarkReplay(b *testing.B) {
	rows := benchRows()
	p := checklist.New(checklist.Options{})
	folder := session.NewFolder(p.Fold())
	b.ReportAllocs()
	for b.Loop() {
		if err := folder.Replay(rows); err != nil {
			b.Fatal(err)
		}
	}
}
