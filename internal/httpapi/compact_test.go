package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// POST /compact summarizes on demand with a focus; a pinned prompt and
// the first one reach the model verbatim after it, and the feed says a
// compaction is starting and then what it dropped.
func TestCompactKeepsPinned(t *testing.T) {
	h := newHarness(t, `[{"text":"ok1"},{"text":"ok2"},{"text":"ok3"},{"text":"the summary"},{"text":"ok4"}]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	next := h.stream("/v1/sessions/"+s.ID+"/events?after=0", "")
	turn := func(text string, pin bool) {
		t.Helper()
		var st struct {
			TurnID string `json:"turn_id"`
		}
		h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": text}}, "pin": pin}, http.StatusAccepted, &st)
		var done map[string]any
		h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+st.TurnID+"?wait=60s", nil, http.StatusOK, &done)
		if done["status"] != "completed" {
			t.Fatalf("turn %q: %v", text, done)
		}
	}
	turn("the task: ship v2", false)
	turn("PIN: prices in cents only", true)
	turn("chatter", false)
	// context.compacting is ephemeral: only a stream that is live when it
	// happens sees it, so read up to the turns' ends first.
	for ended := 0; ended < 3; {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		if f.Type == "turn.completed" {
			ended++
		}
	}
	h.json("POST", "/v1/sessions/"+s.ID+"/compact", map[string]any{"focus": "prices"}, http.StatusOK, nil)
	turn("go on", false)

	var compacting, compacted map[string]any
	for compacted == nil {
		f, ok := next()
		if !ok {
			t.Fatal("stream ended")
		}
		switch f.Type {
		case "context.compacting":
			compacting = f.Data
		case "context.compacted":
			compacted = f.Data
		}
	}
	if compacting == nil || compacting["trigger"] != "manual" || compacting["focus"] != "prices" {
		t.Errorf("context.compacting %v", compacting)
	}
	dropped, _ := compacted["dropped"].(map[string]any)
	if compacted["focus"] != "prices" || dropped == nil || dropped["turns"] != float64(2) || dropped["messages"] != float64(4) {
		t.Errorf("context.compacted %v", compacted)
	}
	reqs := h.prov.Requests()
	last := reqs[len(reqs)-1]
	var text strings.Builder
	for _, m := range last.Messages {
		text.WriteString(m.Text())
	}
	for _, want := range []string{"the task: ship v2", "PIN: prices in cents only"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("after the compaction the request lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "ok1") {
		t.Error("a summarized reply reached the model")
	}
	if !strings.Contains(reqs[3].Messages[len(reqs[3].Messages)-1].Text(), "prices") {
		t.Error("the focus did not reach the summary request")
	}
	// Nothing left to compact: the last turn is always kept.
	h2 := newHarness(t, `[{"text":"ok"}]`)
	var s2 sessionRec
	h2.json("POST", "/v1/sessions", map[string]any{"cwd": h2.cwd}, http.StatusCreated, &s2)
	if code, b, _ := h2.do("POST", "/v1/sessions/"+s2.ID+"/compact", nil); code != http.StatusConflict || !strings.Contains(string(b), "nothing-to-compact") {
		t.Errorf("compacting an empty session: %d %s", code, b)
	}
}
