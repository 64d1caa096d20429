package writetodos_test

import (
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// A person's message or a scheduled prompt starts a new turn and makes
// the list stale; meka's own reminders do not.
func TestOnlyNewTurnsMakeTheListStale(t *testing.T) {
	for _, tc := range []struct {
		source string
		stale  bool
	}{
		{session.SourceUser, true},
		{session.SourceSchedule, true},
		{session.SourceReminder, false},
	} {
		s := newSim(t)
		if _, ok := s.call(create); !ok {
			t.Fatal("create refused")
		}
		s.folder.Apply(session.Row{Turn: 2, Entry: session.UserMessage{Source: tc.source, Parts: model.Parts{model.Text{Text: "next"}}}})
		if got := s.p.Stale(); got != tc.stale {
			t.Errorf("after a %q message: stale %v, want %v", tc.source, got, tc.stale)
		}
	}
}
