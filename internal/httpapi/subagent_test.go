package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/subagent"
)

// A sub-agent over HTTP: its calls stream as tool.output frames of the
// parent's agent_spawn call, each the whole list; its session is hidden
// from the listing and listed under its parent.
func TestSubAgentProgressAndListing(t *testing.T) {
	h := newHarnessWith(t, `[
	 {"tool_calls":[{"id":"sp","name":"agent_spawn","arguments":{"task":"find notes","description":"Finder"}}]},
	 {"tool_calls":[{"id":"f1","name":"file_find","arguments":{"pattern":"*.txt"}}]},
	 {"tool_calls":[{"id":"f2","name":"file_find","arguments":{"pattern":"*.md"}}]},
	 {"text":"Found none."},
	 {"text":"The finder found none."}]`, func(env host.Env) (host.Extension, error) {
		if env.Depth > 0 {
			return host.Extension{}, nil
		}
		return host.Extension{Tools: subagent.Tools(subagent.Options{Spawner: env.Session.Spawner()})}, nil
	})
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "delegate"}}}, http.StatusAccepted, nil)
	// Ephemeral frames and durable events come from two sources, so the
	// progress may follow turn.completed: read until both are in.
	var progress [][]any
	completed := false
	for !completed || len(progress) < 2 {
		f, ok := next()
		if !ok {
			t.Fatalf("stream ended; progress so far %v", progress)
		}
		if f.Type == "tool.output" && f.Data["call_id"] == "sp" {
			lines, _ := f.Data["progress"].([]any)
			progress = append(progress, lines)
		}
		completed = completed || f.Type == "turn.completed"
	}
	if len(progress) != 2 || len(progress[1]) != 2 || progress[1][1] != "file_find *.md" {
		t.Errorf("progress frames of the spawn call = %v", progress)
	}
	var page struct {
		Sessions []sessionRec `json:"items"`
	}
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != s.ID {
		t.Errorf("listing = %+v, want the parent alone", page.Sessions)
	}
	h.json("GET", "/v1/sessions?parent="+s.ID, nil, http.StatusOK, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID == s.ID {
		t.Errorf("listing of the parent's children = %+v, want the sub-agent", page.Sessions)
	}
	// The sub-agent is driven through its parent, though this host still
	// holds its session: a turn, a steer or a fork of its own is refused
	// with a code saying so, and no turn starts.
	child := page.Sessions[0].ID
	turn := map[string]any{"input": []map[string]string{{"type": "text", "text": "hi"}}}
	for _, c := range []struct {
		path string
		body any
	}{{"/turns", turn}, {"/inbox", map[string]any{"text": "hi", "start_if_idle": true}}, {"/fork", nil}} {
		if code, b, _ := h.do("POST", "/v1/sessions/"+child+c.path, c.body); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"subagent-session"`) {
			t.Errorf("POST %s of the sub-agent: %d %s", c.path, code, b)
		}
	}
	if n := len(h.prov.Requests()); n != 5 {
		t.Errorf("%d requests reached the model, want the script's 5", n)
	}
}
