package hooks_test

import (
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/session"
)

// A Stop hook that exits 2 keeps the turn going with its stderr as the
// instruction; stop_hook_active tells it the turn was already kept going.
func TestStopHookContinues(t *testing.T) {
	h := newHarness(t, `{"text":"first"}`, `{"text":"second"}`)
	// Block once: the second time stop_hook_active is true.
	h.settings(settingsFor("Stop", "", `grep -q '"stop_hook_active":true' && exit 0; echo "run the tests before you stop" >&2; exit 2`))
	res := h.run(hooks.Options{}, "go")
	if res.Stop != agent.StopEndTurn || res.Reply != "second" {
		t.Fatalf("result = %+v", res)
	}
	reminders := 0
	for _, r := range h.rows() {
		if u, ok := r.Entry.(session.UserMessage); ok && u.Source == session.SourceReminder {
			reminders++
		}
	}
	if reminders != 1 {
		t.Errorf("%d reminders stored, want 1", reminders)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 || !strings.Contains(requestText(reqs[1]), "run the tests before you stop") {
		t.Fatalf("the second request does not carry the hook's instruction")
	}
	runs := h.hookRuns()
	if len(runs) != 2 || runs[0].Decision != "block" || runs[1].Decision != "" {
		t.Fatalf("runs = %+v", runs)
	}
}

// A Stop hook that always blocks cannot hold a turn forever: once the
// turn was kept going MaxNudges times, the hook is overruled with a
// notice.
func TestStopHookNudgeCap(t *testing.T) {
	rounds := make([]string, 10)
	for i := range rounds {
		rounds[i] = `{"text":"done"}`
	}
	h := newHarness(t, rounds...)
	h.settings(settingsFor("Stop", "", `echo "not yet" >&2; exit 2`))
	res := h.run(hooks.Options{MaxNudges: 3}, "go")
	if res.Stop != agent.StopEndTurn || res.Rounds != 4 {
		t.Fatalf("result = %+v, want the turn ended after 3 continues (4 rounds)", res)
	}
	ns := h.notices()
	if len(ns) != 1 || !strings.Contains(ns[0].Title, "the cap") {
		t.Fatalf("notices = %+v", ns)
	}
}

// A decision:block in JSON continues the turn like exit 2; continue:false
// ends it with the hook's stop reason.
func TestStopHookJSON(t *testing.T) {
	h := newHarness(t, `{"text":"a"}`, `{"text":"b"}`)
	h.settings(settingsFor("Stop", "", `grep -q '"stop_hook_active":true' && { echo '{"continue":false,"stopReason":"enough"}'; exit 0; }; echo '{"decision":"block","reason":"also update the changelog"}'`))
	res := h.run(hooks.Options{}, "go")
	if res.Stop != agent.StopHook || res.Rounds != 2 {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(requestText(h.prov.Requests()[1]), "also update the changelog") {
		t.Fatal("the reason did not reach the model")
	}
}

// A sub-agent's session fires SubagentStop, not Stop.
func TestSubagentStop(t *testing.T) {
	h := newHarness(t, `{"text":"a"}`, `{"text":"b"}`)
	h.settings(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"exit 2"}]}],
		"SubagentStop":[{"hooks":[{"type":"command","command":"cat > \"$CLAUDE_PROJECT_DIR/sub.json\""}]}]}}`)
	res := h.run(hooks.Options{Subagent: true, AgentType: "general"}, "go")
	if res.Rounds != 1 {
		t.Fatalf("result = %+v: the Stop hook ran for a sub-agent", res)
	}
	in := stdinOf(t, h.dir+"/sub.json")
	if in["hook_event_name"] != "SubagentStop" || in["agent_type"] != "general" || in["agent_id"] != h.id {
		t.Fatalf("stdin = %v", in)
	}
}

// A sub-agent's session is part of its parent's: it fires no
// SessionStart of its own.
func TestSubagentNoSessionStart(t *testing.T) {
	h := newHarness(t, done)
	h.settings(`{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch \"$CLAUDE_PROJECT_DIR/started\""}]}]}}`)
	h.run(hooks.Options{Subagent: true}, "go")
	if runs := h.hookRuns(); len(runs) != 0 {
		t.Fatalf("runs = %+v", runs)
	}
}
