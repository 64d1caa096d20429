package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"meka.dev/meka/internal/httpapi"
)

// A provider's own text reaches clients only under relay_provider_errors,
// capped at 4 KiB with the cut marked; off, neither the turn, the feed
// nor the transcript carries it.
func TestProviderErrorsRelayedOnlyWhenOn(t *testing.T) {
	long := "quota exceeded for key sk-live-secret; " + strings.Repeat("x", 10<<10)
	h := newHarness(t, `[{"error":{"status":400,"body":"`+long+`"}},{"error":{"status":400,"body":"`+long+`"}}]`)
	for _, relay := range []bool{true, false} {
		api, err := httpapi.New(httpapi.Options{Host: h.host, Feed: sqliteFeed{h.db.Feed()}, Token: token, Loopback: true,
			Profiles: []string{"test"}, RelayProviderErrors: relay})
		if err != nil {
			t.Fatal(err)
		}
		h.srv = httptest.NewServer(api)
		t.Cleanup(h.srv.Close) // before the streams' cleanups, so it runs after them
		var s sessionRec
		h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
		next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
		var started struct {
			TurnID string `json:"turn_id"`
		}
		h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "hi"}}}, http.StatusAccepted, &started)
		var notice string
		for {
			f, ok := next()
			if !ok {
				t.Fatal("stream ended")
			}
			if f.Type == "notice" && f.Data["title"] == "The turn failed" {
				notice, _ = f.Data["text"].(string)
			}
			if f.Type == "turn.completed" {
				break
			}
		}
		_, turn, _ := h.do("GET", "/v1/sessions/"+s.ID+"/turns/"+started.TurnID, nil)
		_, msgs, _ := h.do("GET", "/v1/sessions/"+s.ID+"/messages", nil)
		if relay {
			if !strings.Contains(notice, "quota exceeded") || !strings.Contains(string(turn), `"provider_error"`) || !strings.Contains(string(turn), `"truncated":true`) {
				t.Errorf("relay on: notice %q turn %s", notice[:min(len(notice), 80)], turn[:min(len(turn), 300)])
			}
			continue
		}
		for what, text := range map[string]string{"notice": notice, "turn": string(turn), "messages": string(msgs)} {
			if strings.Contains(text, "sk-live-secret") || strings.Contains(text, "quota") {
				t.Errorf("relay off: the provider's text reached the %s", what)
			}
		}
	}
}
