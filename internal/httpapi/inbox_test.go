package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/storerec"
)

// The approvals of every session held here are one list, each naming its
// session; an answer through the session's own route empties it, and
// the session record counts what waits.
func TestApprovalsAcrossSessions(t *testing.T) {
	h := newHarness(t, `[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]},
	 {"text":"Wrote it."}]`)
	var quiet, asking sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &quiet)
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "read", "approvals": true}, http.StatusCreated, &asking)
	next := h.stream("/v1/sessions/"+asking.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+asking.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "write"}}}, http.StatusAccepted, nil)
	for f, ok := next(); f.Type != "approval.requested"; f, ok = next() {
		if !ok {
			t.Fatal("stream ended")
		}
	}
	var list struct {
		Items []struct {
			SessionID  string `json:"session_id"`
			ApprovalID string `json:"approval_id"`
			Tool       string
		}
	}
	h.json("GET", "/v1/approvals", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].SessionID != asking.ID || list.Items[0].Tool != "file_write" {
		t.Fatalf("approvals %+v", list)
	}
	var rec struct {
		State struct {
			PendingApprovals    int `json:"pending_approvals"`
			PendingElicitations int `json:"pending_elicitations"`
		}
	}
	h.json("GET", "/v1/sessions/"+asking.ID, nil, http.StatusOK, &rec)
	if rec.State.PendingApprovals != 1 || rec.State.PendingElicitations != 0 {
		t.Fatalf("record state %+v", rec.State)
	}
	var els struct{ Items []any }
	h.json("GET", "/v1/elicitations", nil, http.StatusOK, &els)
	if len(els.Items) != 0 {
		t.Fatalf("elicitations %+v", els)
	}
	h.json("POST", "/v1/sessions/"+asking.ID+"/approvals/"+list.Items[0].ApprovalID, map[string]string{"decision": "allow"}, http.StatusOK, nil)
	h.json("GET", "/v1/approvals", nil, http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Fatalf("approvals after the answer %+v", list)
	}
}

// The history route answers in one response what the stream replays
// from the same cursor, and last_id is where the stream picks up: it
// carries only what came later.
func TestHistoryThenStreamFromLastID(t *testing.T) {
	h := newHarness(t, `[{"text":"One."},{"text":"Two."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	turn := func(text string) {
		t.Helper()
		var tr turnRec
		h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": text}}}, http.StatusAccepted, &tr)
		h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+tr.TurnID+"?wait=30s", nil, http.StatusOK, nil)
	}
	turn("first")
	// Another session's events move the feed on, not this history.
	var other sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &other)
	type page struct {
		Items []struct {
			ID, Type string
			Data     json.RawMessage
		}
		LastID     string  `json:"last_id"`
		NextCursor *string `json:"next_cursor"`
	}
	var all page
	h.json("GET", "/v1/sessions/"+s.ID+"/history", nil, http.StatusOK, &all)
	if len(all.Items) < 3 || all.NextCursor != nil {
		t.Fatalf("history %+v", all)
	}
	var types []string
	for _, it := range all.Items {
		types = append(types, it.Type)
	}
	if !strings.Contains(strings.Join(types, " "), "message.created") || types[len(types)-1] != "turn.completed" {
		t.Fatalf("history types %v", types)
	}
	// The same events the stream replays from 0, in order.
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	for i, it := range all.Items {
		f, ok := next()
		if !ok || f.ID != it.ID || f.Type != it.Type {
			t.Fatalf("event %d: stream %s %s, history %s %s", i, f.ID, f.Type, it.ID, it.Type)
		}
	}
	// last_id reaches past the other session's events.
	lastID, _ := strconv.ParseInt(all.LastID, 10, 64)
	lastItem, _ := strconv.ParseInt(all.Items[len(all.Items)-1].ID, 10, 64)
	if lastID <= lastItem {
		t.Fatalf("last_id %s is not past the other session's events (last item %s)", all.LastID, all.Items[len(all.Items)-1].ID)
	}
	// Paged: two of them, then the rest from the cursor.
	var first page
	h.json("GET", "/v1/sessions/"+s.ID+"/history?limit=2", nil, http.StatusOK, &first)
	if len(first.Items) != 2 || first.NextCursor == nil || *first.NextCursor != first.Items[1].ID {
		t.Fatalf("first page %+v", first)
	}
	var rest page
	h.json("GET", "/v1/sessions/"+s.ID+"/history?after="+*first.NextCursor, nil, http.StatusOK, &rest)
	if len(rest.Items) != len(all.Items)-2 || rest.LastID != all.LastID {
		t.Fatalf("rest %d items, last %s; want %d, %s", len(rest.Items), rest.LastID, len(all.Items)-2, all.LastID)
	}
	// Streaming from last_id: the next turn's events and nothing before.
	live := h.stream("/v1/sessions/"+s.ID+"/events", all.LastID)
	turn("second")
	f, ok := live()
	for ok && f.ID == "" {
		f, ok = live()
	}
	if !ok || f.Type != "turn.started" && f.Type != "message.created" {
		t.Fatalf("first durable frame after last_id: %s %s", f.Type, f.ID)
	}
	if code, _, _ := h.do("GET", "/v1/sessions/"+s.ID+"/history?after=x", nil); code != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d", code)
	}
}

// Records carry the tokens the log records, from the server's usage
// query (the store's spend, as meka stats reads it).
func TestRecordsCarryUsage(t *testing.T) {
	var db *sqlite.DB
	h := newHarnessAPI(t, `[{"text":"Hi.","usage":{"input_tokens":120,"output_tokens":30}}]`, nil, func(o *httpapi.Options) {
		o.Usage = func(ctx context.Context) (map[string]httpapi.Usage, error) {
			gs, err := db.Spend(ctx, storerec.SpendQuery{By: storerec.SpendBySession})
			out := map[string]httpapi.Usage{}
			for _, g := range gs {
				out[g.Key] = httpapi.Usage{Calls: g.Calls, Input: g.Input, Output: g.Output, Cost: g.Cost}
			}
			return out, err
		}
	})
	db = h.db
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	var tr turnRec
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "hi"}}}, http.StatusAccepted, &tr)
	h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+tr.TurnID+"?wait=30s", nil, http.StatusOK, nil)
	type usage struct {
		Calls  int64
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	}
	var list struct {
		Items []struct {
			ID    string
			Usage *usage
		}
	}
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Usage == nil || *list.Items[0].Usage != (usage{1, 120, 30}) {
		t.Fatalf("list %+v", list)
	}
	var one struct{ Usage *usage }
	h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &one)
	if one.Usage == nil || *one.Usage != (usage{1, 120, 30}) {
		t.Fatalf("record usage %+v", one.Usage)
	}
}
