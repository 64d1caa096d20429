package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

// An approval over HTTP: requested on the feed, listed, answered once (a
// second answer is 409), and a steer sent meanwhile reaches the model in
// the next request. Profile changes wait for the turn to end.
func TestApprovalSteerAndPatchMidTurn(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]},
	 {"text":"Wrote it."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "read", "approvals": true}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	key := []string{"Idempotency-Key", "k-1"}
	body := map[string]any{"input": []map[string]string{{"type": "text", "text": "write out.txt"}}}
	code, first, _ := h.do("POST", "/v1/sessions/"+s.ID+"/turns", body, key...)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %s", code, first)
	}
	// The same key again replays the answer; another body is refused.
	code, again, hdr := h.do("POST", "/v1/sessions/"+s.ID+"/turns", body, key...)
	if code != http.StatusAccepted || string(again) != string(first) || hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s %v", code, again, hdr)
	}
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "other"}}}, key...); code != http.StatusUnprocessableEntity {
		t.Fatalf("reused key: %d %s", code, b)
	}

	var aid string
	for aid == "" {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "approval.requested" {
			aid, _ = f.Data["approval_id"].(string)
			if f.Data["title"] == "" || f.Data["tool"] != "file_write" {
				t.Fatalf("approval %+v", f.Data)
			}
		}
	}
	var list struct {
		Items []struct {
			ApprovalID string `json:"approval_id"`
		}
	}
	h.json("GET", "/v1/sessions/"+s.ID+"/approvals", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ApprovalID != aid {
		t.Fatalf("pending: %+v", list)
	}
	// Mid-turn: the profile is refused and nothing changes; a steer is queued.
	if code, b, _ := h.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"profile": "test"}); code != http.StatusConflict || !strings.Contains(string(b), "turn-in-flight") {
		t.Fatalf("patch mid-turn: %d %s", code, b)
	}
	var steer struct{ Delivery string }
	h.json("POST", "/v1/sessions/"+s.ID+"/inbox", map[string]any{"text": "also say hello"}, http.StatusAccepted, &steer)
	if steer.Delivery != "queued" {
		t.Fatalf("steer %+v", steer)
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/approvals/"+aid, map[string]string{"decision": "allow"}, http.StatusOK, nil)
	if code, b, _ := h.do("POST", "/v1/sessions/"+s.ID+"/approvals/"+aid, map[string]string{"decision": "deny"}); code != http.StatusConflict || !strings.Contains(string(b), "allow") {
		t.Fatalf("second answer: %d %s", code, b)
	}
	for {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "turn.completed" {
			if f.Data["status"] != "completed" {
				t.Fatalf("turn %+v", f.Data)
			}
			break
		}
	}
	if _, err := os.ReadFile(filepath.Join(h.cwd, "out.txt")); err != nil {
		t.Fatalf("the approved write: %v", err)
	}
	reqs := h.prov.Requests()
	if len(reqs) != 2 || !strings.Contains(messagesText(reqs[1]), "also say hello") {
		t.Fatalf("the steer did not reach the second request")
	}
	// Idle again: a steer without a turn is refused unless asked to start.
	if code, _, _ := h.do("POST", "/v1/sessions/"+s.ID+"/inbox", map[string]any{"text": "hi"}); code != http.StatusConflict {
		t.Fatalf("idle steer: %d", code)
	}
	// A level not known is refused, the row unchanged.
	if code, _, _ := h.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"permission": "root"}); code != http.StatusUnprocessableEntity {
		t.Fatalf("bad level: %d", code)
	}
	var rec struct{ Permission string }
	h.json("PATCH", "/v1/sessions/"+s.ID, map[string]any{"permission": "workspace"}, http.StatusOK, &rec)
	if rec.Permission != "workspace" {
		t.Fatalf("level after patch: %+v", rec)
	}
}

func messagesText(r *model.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

// Cancelling a turn waiting on an approval resolves the approval as
// denied by the cancel and ends the turn cancelled; a cancel of an ended
// turn answers with the turn.
func TestCancelResolvesPendingApproval(t *testing.T) {
	h := newHarness(t, `[{"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "read", "approvals": true}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	var st struct {
		TurnID string `json:"turn_id"`
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "write"}}}, http.StatusAccepted, &st)
	for {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "approval.requested" {
			break
		}
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/turns/"+st.TurnID+"/cancel", nil, http.StatusAccepted, nil)
	// Both arrive; the gate may give up on the question before the
	// question's own record is written, so their order is not fixed.
	var by, status string
	for by == "" || status == "" {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		switch f.Type {
		case "approval.resolved":
			by, _ = f.Data["by"].(string)
		case "turn.completed":
			status, _ = f.Data["status"].(string)
		}
	}
	if status != "cancelled" || by != "cancel" {
		t.Fatalf("turn %s, approval resolved by %q", status, by)
	}
	var tr turnRec
	h.json("POST", "/v1/sessions/"+s.ID+"/turns/"+st.TurnID+"/cancel", nil, http.StatusOK, &tr)
	if tr.Status != "cancelled" {
		t.Fatalf("cancel after the end: %+v", tr)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "out.txt")); err == nil {
		t.Fatal("the cancelled call ran")
	}
}

// The approval's wait does not depend on the injected clock: a server
// whose clock reads 2020 shows that time in expires_at, and still waits
// the whole timeout for the client's answer.
func TestApprovalWaitIgnoresInjectedClock(t *testing.T) {
	clock := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	h := newHarnessAPI(t, `[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]},
	 {"text":"Wrote it."}]`, nil, func(o *httpapi.Options) { o.Now = func() time.Time { return clock } })
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "read", "approvals": true}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "write"}}}, http.StatusAccepted, nil)
	var aid string
	for aid == "" {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "approval.requested" {
			aid, _ = f.Data["approval_id"].(string)
			if want := clock.Add(tool.DefaultApprovalTimeout).Format(time.RFC3339); f.Data["expires_at"] != want {
				t.Fatalf("expires_at %v, want %s", f.Data["expires_at"], want)
			}
		}
	}
	var got struct{ Decision, By string }
	h.json("POST", "/v1/sessions/"+s.ID+"/approvals/"+aid, map[string]string{"decision": "allow"}, http.StatusOK, &got)
	if got.Decision != "allow" || got.By != "client" {
		t.Fatalf("answer %+v", got)
	}
}
