package httpapi_test

import (
	"net/http"
	"testing"
)

// A background task's start and end are feed events, and the task list
// carries its outcome.
func TestTaskEvents(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"b","name":"shell_execute","arguments":{"command":"exit 3","background":true}}]},
	 {"text":"Started it."},
	 {"text":"It exited 3."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "unrestricted"}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "run it"}}}, http.StatusAccepted, nil)
	var started, finished map[string]any
	for finished == nil {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		switch f.Type {
		case "task.started":
			started = f.Data
		case "task.finished":
			finished = f.Data
		}
	}
	if started == nil || started["state"] != "running" || started["command"] != "exit 3" {
		t.Fatalf("task.started %+v", started)
	}
	out, _ := finished["outcome"].(map[string]any)
	if finished["id"] != started["id"] || out == nil || out["exit_code"] != float64(3) {
		t.Fatalf("task.finished %+v", finished)
	}
	var list struct{ Items []map[string]any }
	h.json("GET", "/v1/tasks?session="+s.ID, nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0]["id"] != started["id"] {
		t.Fatalf("tasks %+v", list)
	}
}
