package repl

import (
	"context"
	"slices"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// /pin sends its words marked to be kept verbatim, /compact passes its
// focus, and /context says what each compaction dropped and what every
// compaction keeps.
func TestPinCompactContext(t *testing.T) {
	h := newHarness(t)
	var sent []session.UserMessage
	h.f.run = func(_ context.Context, msg session.UserMessage) (agent.Result, error) {
		sent = append(sent, msg)
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	h.submitText("/pin prices are in cents")
	if len(sent) != 1 || !sent[0].Pinned || messageText(sent[0].Parts) != "prices are in cents" {
		t.Fatalf("/pin sent %+v", sent)
	}
	h.submitText("/pin")
	h.wantCommitted("/pin takes the words to send")
	h.submitText("/compact the pricing rules")
	if !slices.Equal(h.f.focuses, []string{"the pricing rules"}) {
		t.Fatalf("/compact focus %q", h.f.focuses)
	}
	h.f.rows = []session.Row{
		{Seq: 1, Turn: 1, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "the task"}}}},
		{Seq: 2, Turn: 2, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "prices are in cents"}}, Pinned: true}},
		{Seq: 3, Turn: 3, Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: "/deploy"}}, Command: "deploy", Expansion: model.Parts{model.Text{Text: "BODY"}}}},
		{Seq: 4, Turn: 4, Entry: session.Compaction{Summary: "s", KeptFrom: 3, Trigger: "manual", Focus: "the pricing rules",
			Dropped: &session.Dropped{Turns: 2, Messages: 4, ToolOutputs: 3, Bytes: 5000, ToolOutputBytes: 4096}}},
	}
	h.submitText("/context")
	h.wantCommitted(`Compaction (manual, focus "the pricing rules"), kept from row 3: dropped 2 turns, 4 messages, 3 tool outputs (4.0 KB of 4.9 KB).`,
		"Kept verbatim through every compaction: the first message, 1 pinned message(s), skills deploy")
}
