package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/internal/archive"
)

// GET /v1/sessions/{id}/export writes what `meka sessions export` does:
// an archive import reads whole, a transcript, an ATIF trajectory.
func TestExport(t *testing.T) {
	h := newHarness(t, `[{"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["Say hi"]}}]},{"tool_calls":[{"id":"b","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}}]},{"text":"Hi."}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	var started struct {
		TurnID string `json:"turn_id"`
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "say hi"}}}, http.StatusAccepted, &started)
	h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+started.TurnID+"?wait=30s", nil, http.StatusOK, nil)

	code, body, hdr := h.do("GET", "/v1/sessions/"+s.ID+"/export", nil)
	if code != 200 || hdr.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("json: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	head, got, err := archive.ReadJSON(bytes.NewReader(body))
	if err != nil || head.Meta.ID != s.ID || len(got.Rows) < 6 {
		t.Fatalf("archive: %v %+v %d rows", err, head.Meta, len(got.Rows))
	}
	code, body, _ = h.do("GET", "/v1/sessions/"+s.ID+"/export?format=markdown", nil)
	if code != 200 || !strings.Contains(string(body), "**Assistant**\n\nHi.") {
		t.Fatalf("markdown: %d %s", code, body)
	}
	code, body, _ = h.do("GET", "/v1/sessions/"+s.ID+"/export?format=atif", nil)
	var traj struct {
		SchemaVersion string `json:"schema_version"`
		SessionID     string `json:"session_id"`
	}
	if code != 200 || json.Unmarshal(body, &traj) != nil || traj.SchemaVersion != archive.ATIFVersion || traj.SessionID != s.ID {
		t.Fatalf("atif: %d %s", code, body)
	}
	if code, body, _ = h.do("GET", "/v1/sessions/"+s.ID+"/export?format=pdf", nil); code != 422 {
		t.Fatalf("pdf: %d %s", code, body)
	}
	if code, _, _ = h.do("GET", "/v1/sessions/nope/export", nil); code != 404 {
		t.Fatalf("unknown session: %d", code)
	}
}
