package httpapi_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/session"
)

type sessionRec struct {
	ID    string `json:"id"`
	State struct {
		Held   bool
		Status string
	}
	Checklist []struct{ ID, Text, Status string }
}

type turnRec struct {
	TurnID       string `json:"turn_id"`
	Status       string `json:"status"`
	StopReason   string `json:"stop_reason"`
	FirstEventID int64  `json:"first_event_id"`
	LastEventID  int64  `json:"last_event_id"`
}

// A turn with a checklist, over HTTP: started asynchronously, its result
// on the turn resource, every step on the feed with ids, and a resumed
// stream carrying exactly what followed the last id seen.
func TestTurnWithChecklistOnTheFeed(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["Write the note"]}}]},
	 {"text":"All done."},
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"note.txt","content":"hi"}},{"id":"e","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}}]},
	 {"text":"Written."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")

	var started struct {
		TurnID string `json:"turn_id"`
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "write a note"}}}, http.StatusAccepted, &started)
	var frames []sseFrame
	for {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.ID != "" {
			frames = append(frames, f)
		}
		if f.Type == "turn.completed" {
			break
		}
	}
	var tr turnRec
	h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+started.TurnID+"?wait=30s", nil, http.StatusOK, &tr)
	if tr.Status != "completed" || tr.StopReason != "end_turn" || tr.FirstEventID == 0 || tr.LastEventID <= tr.FirstEventID {
		t.Fatalf("turn %+v", tr)
	}
	var types []string
	var nudge, checklists int
	last := ""
	for _, f := range frames {
		types = append(types, f.Type)
		if last != "" && len(f.ID) < len(last) || (len(f.ID) == len(last) && f.ID <= last) {
			t.Fatalf("ids not increasing: %s after %s", f.ID, last)
		}
		last = f.ID
		switch f.Type {
		case "notice":
			if f.Data["title"] == "Checklist: 1 open item, continuing, nudge 1 of 3" {
				nudge++
			}
		case "checklist.updated":
			checklists++
		}
	}
	joined := strings.Join(types, " ")
	for _, want := range []string{"session.created", "turn.started", "message.created", "tool.started", "tool.finished", "turn.completed"} {
		if !strings.Contains(joined, want) {
			t.Errorf("feed lacks %s: %s", want, joined)
		}
	}
	if nudge != 1 || checklists != 2 {
		t.Errorf("nudge notices %d, checklist.updated %d: %s", nudge, checklists, joined)
	}
	if b, err := os.ReadFile(filepath.Join(h.cwd, "note.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("note: %q %v", b, err)
	}

	// Resume after the k-th frame: exactly the frames after it follow.
	k := len(frames) / 2
	resumed := h.stream("/v1/sessions/"+s.ID+"/events", frames[k].ID)
	for _, want := range frames[k+1:] {
		f, ok := resumed()
		if !ok || f.ID != want.ID || f.Type != want.Type {
			t.Fatalf("resumed frame %+v, want %s %s", f, want.ID, want.Type)
		}
	}

	// The record shows the session held and idle, its checklist empty.
	var rec sessionRec
	h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &rec)
	if !rec.State.Held || rec.State.Status != "idle" || len(rec.Checklist) != 0 {
		t.Fatalf("record %+v", rec)
	}
	// A second turn while none runs is fine; the transcript is there.
	code, body, _ := h.do("GET", "/v1/sessions/"+s.ID+"/messages", nil)
	if code != 200 || !strings.Contains(string(body), "write a note") {
		t.Fatalf("messages: %d %s", code, body)
	}
}

// The security defaults: a token on every route but health, never in a
// query string; foreign origins and non-loopback Host headers refused.
func TestSecurityDefaults(t *testing.T) {
	h := newHarness(t, `[]`)
	get := func(path string, hdr map[string]string) int {
		req, _ := http.NewRequest("GET", h.srv.URL+path, nil)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == 401 && res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
		return res.StatusCode
	}
	bearer := "Bearer " + token
	for _, tc := range []struct {
		name string
		path string
		hdr  map[string]string
		want int
	}{
		{"health needs nothing", "/v1/health", nil, 200},
		{"no token", "/v1/sessions", nil, 401},
		{"wrong token", "/v1/sessions", map[string]string{"Authorization": "Bearer nope"}, 401},
		{"token in the query", "/v1/sessions?access_token=" + token, nil, 401},
		{"token in the query too", "/v1/sessions?token=" + token, map[string]string{"Authorization": bearer}, 401},
		{"foreign origin", "/v1/sessions", map[string]string{"Authorization": bearer, "Origin": "https://evil.example"}, 403},
		{"rebinding host", "/v1/sessions", map[string]string{"Authorization": bearer, "Host": "evil.test:7878"}, 403},
		{"with the token", "/v1/sessions", map[string]string{"Authorization": bearer}, 200},
		{"localhost by name", "/v1/sessions", map[string]string{"Authorization": bearer, "Host": "localhost:7878"}, 200},
		{"openapi needs the token", "/v1/openapi.json", nil, 401},
	} {
		if got := get(tc.path, tc.hdr); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Bad input gets a problem naming what is wrong, and changes nothing.
func TestBadInputRefused(t *testing.T) {
	h := newHarness(t, `[]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	for _, tc := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "colour": "blue"}, 400, "body-invalid"},
		{"POST", "/v1/sessions", map[string]any{"cwd": "relative/dir"}, 422, "path-not-absolute"},
		{"POST", "/v1/sessions", map[string]any{"cwd": h.cwd + "/missing"}, 422, "cwd-invalid"},
		{"POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "profile": "nope"}, 422, "profile-unknown"},
		{"POST", "/v1/sessions/" + s.ID + "/turns", map[string]any{"input": []map[string]string{{"type": "video"}}}, 422, "input-invalid"},
		{"POST", "/v1/sessions/" + s.ID + "/turns", map[string]any{"input": "hi"}, 400, "body-invalid"},
		{"PATCH", "/v1/sessions/" + s.ID, map[string]any{"project": "nowhere"}, 422, "project-unknown"},
		{"GET", "/v1/sessions/" + s.ID[:8], nil, 404, "session-unknown"},
		{"POST", "/v1/sessions/" + s.ID + "/approvals/nope", map[string]string{"decision": "maybe"}, 422, "decision-invalid"},
		{"POST", "/v1/sessions/" + s.ID + "/approvals/nope", map[string]string{"decision": "allow"}, 404, "approval-unknown"},
		{"POST", "/v1/sessions/" + s.ID + "/elicitations/nope", map[string]string{"action": "ok"}, 422, "action-invalid"},
		{"POST", "/v1/sessions/" + s.ID + "/elicitations/nope", map[string]string{"action": "accept"}, 404, "elicitation-unknown"},
	} {
		code, b, _ := h.do(tc.method, tc.path, tc.body)
		if code != tc.status || !strings.Contains(string(b), `"code":"`+tc.code+`"`) {
			t.Errorf("%s %s %v: %d %s, want %d %s", tc.method, tc.path, tc.body, code, b, tc.status, tc.code)
		}
	}
	// A body over the 8 MiB bound is refused whole, on any endpoint that
	// reads one, before any of it is acted on.
	huge := strings.Repeat("x", 9<<20)
	for path, big := range map[string]any{
		"/v1/sessions":                    map[string]any{"cwd": h.cwd, "title": huge},
		"/v1/sessions/" + s.ID + "/turns": map[string]any{"input": []map[string]string{{"type": "text", "text": huge}}},
	} {
		if code, b, _ := h.do("POST", path, big); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"body-too-large"`) {
			t.Errorf("POST %s with 9 MiB: %d %.200s", path, code, b)
		}
	}
	req, _ := http.NewRequest("GET", h.srv.URL+"/v1/sessions/"+s.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", "not-a-number")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("bad cursor: %d", res.StatusCode)
	}
	// Nothing was written by the refusals: one session, no turn.
	var page struct{ Items []sessionRec }
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
	if len(page.Items) != 1 || len(h.prov.Requests()) != 0 {
		t.Fatalf("after refusals: %d sessions, %d model requests", len(page.Items), len(h.prov.Requests()))
	}
}

// GET /v1/sessions/{id} carries the checklist whether or not the server
// holds the session: the open items and the deferred ones with what they
// wait on, folded from the log when nothing holds it; [] when nothing is
// owed.
func TestRecordChecklistAlways(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["Write the note","Ask Ana about the date","Tidy up"]}}]},
	 {"tool_calls":[{"id":"e1","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}},{"id":"e2","name":"checklist_edit","arguments":{"id":"c2","status":"deferred","reason":"waits on Ana's answer"}},{"id":"e3","name":"checklist_edit","arguments":{"id":"c3","status":"canceled","reason":"nothing to tidy"}}]},
	 {"text":"Done for now."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	type item struct {
		ID, Text, Status, Reason string
		TaskID                   string `json:"task_id"`
	}
	type rec struct {
		State     struct{ Held bool }
		Checklist *[]item
	}
	var empty rec
	h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &empty)
	if empty.Checklist == nil || len(*empty.Checklist) != 0 {
		t.Fatalf("a session with no list: %+v", empty.Checklist)
	}
	var tr turnRec
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "go"}}}, http.StatusAccepted, &tr)
	h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+tr.TurnID+"?wait=30s", nil, http.StatusOK, &tr)
	if tr.Status != "completed" {
		t.Fatalf("turn %+v", tr)
	}
	want := []item{{ID: "c2", Text: "Ask Ana about the date", Status: "deferred", Reason: "waits on Ana's answer"}}
	for _, held := range []bool{true, false} {
		if !held {
			if err := h.host.CloseSession(t.Context(), s.ID); err != nil {
				t.Fatal(err)
			}
		}
		var got rec
		h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &got)
		if got.State.Held != held || got.Checklist == nil || fmt.Sprint(*got.Checklist) != fmt.Sprint(want) {
			t.Errorf("held %v: record %+v, checklist %+v", held, got.State, got.Checklist)
		}
	}
}

// The list shows every session's checklist progress, held here or not
// (folded from the log, and folded again once the log moves on), and
// marks a session another process holds as held elsewhere, naming it.
func TestListHeldElsewhereAndProgress(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["Write the note","Send it","Tidy up"]}}]},
	 {"tool_calls":[{"id":"e1","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}},{"id":"d2","name":"checklist_edit","arguments":{"id":"c2","status":"deferred","reason":"waits on Ana"}},{"id":"d3","name":"checklist_edit","arguments":{"id":"c3","status":"deferred","reason":"later"}}]},
	 {"text":"One done."},
	 {"tool_calls":[{"id":"e2","name":"checklist_edit","arguments":{"id":"c2","status":"completed"}}]},
	 {"text":"Two done."}]`)
	var s, idle sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &idle)
	turn := func() {
		t.Helper()
		var tr turnRec
		h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "go"}}}, http.StatusAccepted, &tr)
		h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+tr.TurnID+"?wait=30s", nil, http.StatusOK, &tr)
		if tr.Status != "completed" {
			t.Fatalf("turn %+v", tr)
		}
		if err := h.host.CloseSession(t.Context(), s.ID); err != nil {
			t.Fatal(err)
		}
	}
	type listed struct {
		ID    string
		State struct {
			Held          bool
			HeldElsewhere bool `json:"held_elsewhere"`
			Holder        *struct {
				PID  int
				Host string
			}
		}
		Progress *struct{ Completed, Total int } `json:"checklist_progress"`
	}
	list := func() map[string]listed {
		t.Helper()
		var page struct{ Items []listed }
		h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
		out := map[string]listed{}
		for _, it := range page.Items {
			out[it.ID] = it
		}
		return out
	}
	progress := func(l listed) string {
		if l.Progress == nil {
			return "none"
		}
		return fmt.Sprintf("%d/%d", l.Progress.Completed, l.Progress.Total)
	}

	turn()
	got := list()
	if g := got[s.ID]; g.State.Held || g.State.HeldElsewhere || progress(g) != "1/3" {
		t.Fatalf("a released session: %+v, progress %s, want 1/3 from its log", g.State, progress(g))
	}
	if g := got[idle.ID]; progress(g) != "none" {
		t.Errorf("a session with no checklist: progress %s", progress(g))
	}

	// Another process takes the session.
	other := session.Holder{PID: 4242, Host: "elsewhere.example"}
	lock, err := h.db.Sessions().Lock(t.Context(), s.ID, other)
	if err != nil {
		t.Fatal(err)
	}
	g := list()[s.ID]
	if !g.State.HeldElsewhere || g.State.Held || g.State.Holder == nil || g.State.Holder.PID != other.PID || g.State.Holder.Host != other.Host || progress(g) != "1/3" {
		t.Fatalf("held by another process: %+v holder %+v, progress %s", g.State, g.State.Holder, progress(g))
	}
	var one listed
	h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &one)
	if !one.State.HeldElsewhere || progress(one) != "1/3" {
		t.Errorf("GET of a session held elsewhere: %+v, progress %s", one.State, progress(one))
	}
	if code, body, _ := h.do("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "go"}}}); code != http.StatusConflict || !strings.Contains(string(body), "held-elsewhere") {
		t.Errorf("a turn on a session held elsewhere: %d %s", code, body)
	}
	if g := list()[idle.ID]; g.State.HeldElsewhere {
		t.Errorf("a free session shown held elsewhere: %+v", g.State)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Let go, and the log moved on: the list folds it again.
	turn()
	if g := list()[s.ID]; g.State.HeldElsewhere || progress(g) != "2/3" {
		t.Fatalf("after the other process let go and a turn: %+v, progress %s, want 2/3", g.State, progress(g))
	}
}
