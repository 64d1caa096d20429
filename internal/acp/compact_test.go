package acp

import (
	"strings"
	"testing"
)

// A prompt sent with _meta.pin survives /compact verbatim, /compact's
// words are the summary's focus, and the completed compaction says what
// it dropped.
func TestCompactCommandKeepsPinned(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"ok1"},{"text":"ok2"},{"text":"ok3"},{"text":"the summary"},{"text":"ok4"}]`})
	id := h.newSession()
	h.prompt(id, "the task: ship v2")
	var resp PromptResponse
	h.call("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("PIN: prices in cents only")}, Meta: Meta{"pin": true}}, &resp)
	h.prompt(id, "chatter")
	h.sync()
	h.take()
	if r := h.prompt(id, "/compact prices"); r.StopReason != "end_turn" {
		t.Fatalf("/compact ended %q", r.StopReason)
	}
	h.sync()
	var done Meta
	var said string
	for _, n := range h.take() {
		switch u := n.Update.(type) {
		case CompactionUpdate:
			if u.Status == "completed" {
				done = u.Meta
			}
		case ContentChunk:
			said += u.Content.Text
		}
	}
	f, _ := done["compaction"].(map[string]any)
	if f["trigger"] != "manual" || f["focus"] != "prices" || f["dropped"] == nil {
		t.Errorf("compaction facts %v", f)
	}
	if !strings.HasPrefix(said, "Compacted") {
		t.Errorf("/compact said %q", said)
	}
	h.prompt(id, "go on")
	reqs := h.prov.Requests()
	if !strings.Contains(reqs[3].Messages[len(reqs[3].Messages)-1].Text(), "prices") {
		t.Error("the focus did not reach the summary request")
	}
	var text strings.Builder
	for _, m := range reqs[len(reqs)-1].Messages {
		text.WriteString(m.Text())
	}
	for _, want := range []string{"the task: ship v2", "PIN: prices in cents only"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("after /compact the request lacks %q", want)
		}
	}
	if strings.Contains(text.String(), "ok1") {
		t.Error("a summarized reply reached the model")
	}
}
