package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
)

// The home directory and / are refused as the workspace of a session at
// the workspace level, creating nothing, and taken under --workspace-home
// (host.Options.WorkspaceHome); a session at read there may not be raised.
func TestWideWorkspaceRefused(t *testing.T) {
	home, _ := host.Canonical(t.TempDir())
	h := newHarnessOpts(t, `[]`, func(o *host.Options) { o.Home = home })
	for _, cwd := range []string{home, "/"} {
		code, b, _ := h.do("POST", "/v1/sessions", map[string]any{"cwd": cwd})
		if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"code":"workspace-too-wide"`) || !strings.Contains(string(b), "--workspace-home") {
			t.Errorf("POST /v1/sessions in %s: %d %s, want 422 workspace-too-wide", cwd, code, b)
		}
	}
	var page struct{ Items []sessionRec }
	h.json("GET", "/v1/sessions", nil, http.StatusOK, &page)
	if len(page.Items) != 0 {
		t.Fatalf("the refusals created %d sessions", len(page.Items))
	}

	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": home, "permission": "read"}, http.StatusCreated, &s)
	code, b, _ := h.do("PATCH", "/v1/sessions/"+s.ID, map[string]any{"permission": "workspace"})
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), `"code":"workspace-too-wide"`) {
		t.Errorf("raising a read session in home to workspace: %d %s", code, b)
	}
	var rec struct{ Permission string }
	h.json("GET", "/v1/sessions/"+s.ID, nil, http.StatusOK, &rec)
	if rec.Permission != "read" {
		t.Errorf("after the refused raise the session is at %q", rec.Permission)
	}

	allowed := newHarnessOpts(t, `[]`, func(o *host.Options) { o.Home, o.WorkspaceHome = home, true })
	for _, cwd := range []string{home, "/"} {
		allowed.json("POST", "/v1/sessions", map[string]any{"cwd": cwd}, http.StatusCreated, nil)
	}
}
