package events_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/internal/events"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// A long tool result is cut on a rune boundary even when the output holds
// a stray invalid byte before the cut: only that byte turns into U+FFFD.
func TestToolFinishedCutsOnARuneBoundary(t *testing.T) {
	text := "\xff" + strings.Repeat("é", 5000) // 10001 bytes, runes start at odd offsets
	rows := []session.Row{{Seq: 3, Turn: 1, Entry: session.ToolResult{CallID: "c", Name: "shell", Status: session.StatusOK,
		Content: model.Parts{model.Text{Text: text}}}}}
	evs := events.FromRows("s", rows)
	if len(evs) != 1 || evs[0].Type != "tool.finished" {
		t.Fatalf("events %+v", evs)
	}
	var d struct {
		Result    string
		Truncated bool
	}
	if err := json.Unmarshal(evs[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	// 8 KiB cuts inside the 4096th é: the 4095 before it stay whole.
	if want := "\ufffd" + strings.Repeat("é", 4095); d.Result != want || !d.Truncated {
		t.Fatalf("result %q… (%d bytes), truncated %v", d.Result[max(0, len(d.Result)-8):], len(d.Result), d.Truncated)
	}
}
