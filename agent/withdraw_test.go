package agent_test

import (
	"context"
	"errors"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

func TestWithdrawTakesTheLastTurnBack(t *testing.T) {
	h := newHarness(t, `[{"text": "hello"}, {"error": {"status": 503, "body": "down"}}, {"text": "back"}]`)
	e := h.engine(agent.Options{})
	ctx := t.Context()
	if _, err := e.Run(ctx, userText("hi")); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: "scheduled prompt"}}, Source: session.SourceSchedule})
	if err == nil || res.Stop != agent.StopFailed || res.Turn != 2 {
		t.Fatalf("second turn: %+v %v", res, err)
	}
	rewind := func(ctx context.Context, keep int64) error { return h.store.Rewind(ctx, h.id, keep) }
	if err := e.Withdraw(ctx, 1, rewind); !errors.Is(err, agent.ErrNotLastTurn) {
		t.Errorf("Withdraw of an earlier turn: %v", err)
	}
	if err := e.Withdraw(ctx, 2, rewind); err != nil {
		t.Fatal(err)
	}
	for name, rows := range map[string][]session.Row{"store": h.rows(), "engine": e.Rows()} {
		if session.LastTurn(rows) != 1 {
			t.Errorf("%s still has turn %d", name, session.LastTurn(rows))
		}
	}
	// The next turn takes the number back, and the model never sees the
	// withdrawn prompt.
	res, err = e.Run(ctx, userText("again"))
	if err != nil || res.Turn != 2 {
		t.Fatalf("next turn: %+v %v", res, err)
	}
	reqs := h.prov.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, p := range m.Parts {
			if tx, ok := p.(model.Text); ok && tx.Text == "scheduled prompt" {
				t.Error("the withdrawn prompt was sent to the model")
			}
		}
	}
}
