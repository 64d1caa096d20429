package httpapi_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/testenv"
)

// POST /v1/sessions/{id}/rewind takes the files and the log back; a file
// edited outside meka refuses it (409 naming the file) until forced.
func TestRewindOverHTTP(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	cp := filepath.Join(t.TempDir(), "checkpoints")
	h := newHarnessOpts(t, `[{"text":"hi"},
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"note.txt","content":"new"}},{"id":"x","name":"file_write","arguments":{"path":"old.txt","content":"changed"}}]},
	 {"text":"Written."}]`, func(o *host.Options) { o.Checkpoints = &host.CheckpointOptions{Dir: cp} })
	old := filepath.Join(h.cwd, "old.txt")
	os.WriteFile(old, []byte("original"), 0o644)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	for _, text := range []string{"hello", "write"} {
		var started struct {
			TurnID string `json:"turn_id"`
		}
		h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": text}}}, http.StatusAccepted, &started)
		var tr turnRec
		h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+started.TurnID+"?wait=30s", nil, http.StatusOK, &tr)
		if tr.Status != "completed" {
			t.Fatalf("turn %+v", tr)
		}
	}
	os.WriteFile(old, []byte("edited by a person"), 0o644)
	code, body, _ := h.do("POST", "/v1/sessions/"+s.ID+"/rewind", map[string]any{"turn": 1})
	if code != http.StatusConflict || !strings.Contains(string(body), "files-changed") || !strings.Contains(string(body), "old.txt") {
		t.Fatalf("outside edit: %d %s", code, body)
	}
	if code, body, _ := h.do("POST", "/v1/sessions/"+s.ID+"/rewind", map[string]any{"turn": 5}); code != http.StatusUnprocessableEntity {
		t.Fatalf("turn past the end: %d %s", code, body)
	}
	var res struct {
		Files []struct{ Path, Op string }
		Undo  *int64
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/rewind", map[string]any{"turn": 1, "force": true}, http.StatusOK, &res)
	if len(res.Files) != 2 || res.Undo == nil {
		t.Fatalf("rewind: %+v", res)
	}
	if b, _ := os.ReadFile(old); string(b) != "original" {
		t.Fatalf("old.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "note.txt")); !os.IsNotExist(err) {
		t.Fatalf("note.txt not removed: %v", err)
	}
	rows, err := h.db.Sessions().Tail(t.Context(), s.ID, 1)
	if err != nil || len(rows) == 0 || rows[0].Turn != 1 {
		t.Fatalf("log not rewound: %v %v", rows, err)
	}
}
