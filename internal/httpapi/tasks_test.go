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

// The task list carries the end of each task's output with ?tail=, and a
// running task stops over HTTP: once, then 409; an unknown one is 404.
func TestTaskTailAndStop(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"a","name":"shell_execute","arguments":{"command":"echo first line; echo tail-marker","background":true}},
	                {"id":"b","name":"shell_execute","arguments":{"command":"exec sleep 600","background":true}}]},
	 {"text":"Started both."},
	 {"text":"One ended."},
	 {"text":"The other ended."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "unrestricted"}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "run"}}}, http.StatusAccepted, nil)
	var quick, slow string
	for quick == "" || slow == "" {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		switch {
		case f.Type == "task.finished":
			quick, _ = f.Data["id"].(string)
		case f.Type == "task.started" && f.Data["command"] == "exec sleep 600":
			slow, _ = f.Data["id"].(string)
		}
	}
	var list struct {
		Items []struct {
			ID, State  string
			OutputTail *string `json:"output_tail"`
		}
	}
	h.json("GET", "/v1/tasks?tail=12&session="+s.ID, nil, http.StatusOK, &list)
	for _, it := range list.Items {
		if it.ID == quick && (it.OutputTail == nil || *it.OutputTail != "tail-marker\n") {
			t.Fatalf("tail of %s: %v", it.ID, it.OutputTail)
		}
	}
	var stopped struct {
		State   string
		Outcome *struct{ Signal string }
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/tasks/"+slow+"/stop", nil, http.StatusOK, &stopped)
	if stopped.State == "running" || stopped.Outcome == nil {
		t.Fatalf("stopped %+v", stopped)
	}
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/tasks/"+slow+"/stop", nil); code != http.StatusConflict {
		t.Fatalf("second stop: %d %s", code, b)
	}
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/tasks/nope/stop", nil); code != http.StatusNotFound {
		t.Fatalf("unknown task: %d %s", code, b)
	}
}
