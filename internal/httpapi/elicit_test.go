package httpapi_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
)

// An MCP server's request for input reaches an HTTP client as an
// elicitation: on the feed, listed, answered once, and the answer goes
// back to the server's tool.
func TestElicitationOverHTTP(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", bin, "meka.dev/meka/internal/mcp/mcptest/mcptestserver").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	m := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "t", Command: bin, EnabledTools: []string{"ask"}}},
		Env: []string{"PATH=" + os.Getenv("PATH")}})
	m.Start(t.Context())
	t.Cleanup(func() { m.Close() })
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := newHarnessOpts(t, `[
	 {"tool_calls":[{"id":"q","name":"mcp__t__ask","arguments":{"mode":"form"}}]},
	 {"text":"Thanks."}]`, func(o *host.Options) { o.MCP = m })
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd, "permission": "unrestricted"}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "ask me"}}}, http.StatusAccepted, nil)
	var eid string
	for eid == "" {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "elicitation.requested" {
			eid, _ = f.Data["elicitation_id"].(string)
			if f.Data["server"] != "t" || f.Data["mode"] != "form" {
				t.Fatalf("elicitation %+v", f.Data)
			}
		}
	}
	var list struct{ Items []map[string]any }
	h.json("GET", "/v1/sessions/"+s.ID+"/elicitations", nil, http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Fatalf("pending %+v", list)
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/elicitations/"+eid, map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, http.StatusOK, nil)
	if code, _, _ := h.do("POST", "/v1/sessions/"+s.ID+"/elicitations/"+eid, map[string]any{"action": "decline"}); code != http.StatusConflict {
		t.Fatalf("second answer: %d", code)
	}
	var result string
	for {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "tool.finished" {
			result, _ = f.Data["result"].(string)
		}
		if f.Type == "turn.completed" {
			break
		}
	}
	if !strings.Contains(result, `accept {"name":"Ada"}`) {
		t.Fatalf("the tool got %q", result)
	}
}
