package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// BenchmarkFeedReplay10k is a client resuming from id 0 over a feed of
// 10,000 events: the stream opened, every frame read off the wire.
func BenchmarkFeedReplay10k(b *testing.B) {
	h := newHarness(b, `[]`)
	const n = 10000
	var last int64
	for i := 0; i < n; i += 500 {
		batch := make([]sqlite.FeedEntry, 500)
		for j := range batch {
			batch[j] = sqlite.FeedEntry{SessionID: "s", Type: "tool.finished", Data: []byte(`{"call_id":"c` + strconv.Itoa(i+j) + `","tool":"file_read","status":"completed","result":"` + strings.Repeat("x", 200) + `","truncated":false}`)}
		}
		evs, err := h.db.Feed().Append(b.Context(), batch)
		if err != nil {
			b.Fatal(err)
		}
		last = evs[len(evs)-1].ID
	}
	want := strconv.FormatInt(last, 10)
	h.spec = nil // measure the server, not the schema check
	for b.Loop() {
		if got := replay(b, h, want); got != n {
			b.Fatalf("%d frames", got)
		}
	}
}

// replay reads the whole feed as a client that only splits frames,
// until the frame with id want, and returns how many it read.
func replay(b *testing.B, h *harness, want string) int {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Last-Event-ID", "0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	got := 0
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			got++
			if id == want {
				return got
			}
		}
	}
	b.Fatal("stream ended")
	return 0
}

// BenchmarkTurnWith50Subscribers is a turn of a tool round and a reply,
// with 0 and 50 live SSE clients on its session: the clients must not
// slow the turn.
func BenchmarkTurnWith50Subscribers(b *testing.B) {
	for _, subs := range []int{0, 50} {
		b.Run(fmt.Sprintf("subscribers=%d", subs), func(b *testing.B) {
			const turns = 2000 // rounds for the script, more than any b.N here
			var rounds []string
			for i := range turns {
				rounds = append(rounds, fmt.Sprintf(`{"tool_calls":[{"id":"r%d","name":"file_read","arguments":{"path":"a.txt"}}]}`, i), `{"text":"ok"}`)
			}
			h := newHarness(b, "["+strings.Join(rounds, ",")+"]")
			h.spec = nil
			if err := writeFile(h.cwd+"/a.txt", "hello\n"); err != nil {
				b.Fatal(err)
			}
			var s sessionRec
			h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
			ctx, cancel := context.WithCancel(b.Context())
			var wg sync.WaitGroup
			for range subs {
				req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/v1/sessions/"+s.ID+"/events", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() { // a client that reads and drops what it gets
					defer wg.Done()
					defer res.Body.Close()
					io.Copy(io.Discard, res.Body)
				}()
			}
			input := map[string]any{"input": []map[string]string{{"type": "text", "text": "read it"}}}
			for i := 0; b.Loop(); i++ {
				if i >= turns {
					b.Fatal("script exhausted")
				}
				var st struct {
					TurnID string `json:"turn_id"`
				}
				h.json("POST", "/v1/sessions/"+s.ID+"/turns", input, http.StatusAccepted, &st)
				var tr turnRec
				h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+st.TurnID+"?wait=60s", nil, http.StatusOK, &tr)
				if tr.Status != "completed" {
					b.Fatalf("turn %+v", tr)
				}
			}
			b.StopTimer()
			cancel()
			h.srv.CloseClientConnections()
			wg.Wait()
		})
	}
}

// BenchmarkListSessions50 lists 50 sessions nobody holds, each with a
// checklist and a log of 500 rows, whose progress the list folds from
// the logs: "unchanged" when no log moved since the last listing (the
// folded plans are kept), "moved" when every log did (each folded again).
func BenchmarkListSessions50(b *testing.B) {
	h := newHarness(b, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["one","two","three"]}}]},
	 {"tool_calls":[{"id":"e","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}},{"id":"d","name":"checklist_edit","arguments":{"id":"c2","status":"deferred","reason":"later"}},{"id":"f","name":"checklist_edit","arguments":{"id":"c3","status":"deferred","reason":"later"}}]},
	 {"text":"ok"}]`)
	h.spec = nil
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	var tr turnRec
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "go"}}}, http.StatusAccepted, &tr)
	h.json("GET", "/v1/sessions/"+s.ID+"/turns/"+tr.TurnID+"?wait=30s", nil, http.StatusOK, &tr)
	h.json("POST", "/v1/sessions/"+s.ID+"/close", nil, http.StatusOK, nil)
	store := h.db.Sessions()
	text := func(t string) session.Row {
		return session.Row{Turn: 2, Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: t}}}}
	}
	pad := make([]session.Row, 0, 500)
	for i := range cap(pad) {
		pad = append(pad, text(fmt.Sprintf("line %d %s", i, strings.Repeat("x", 200))))
	}
	if _, err := store.Append(b.Context(), s.ID, pad); err != nil {
		b.Fatal(err)
	}
	ids := []string{s.ID}
	for range 49 {
		m, err := store.Fork(b.Context(), s.ID, -1)
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	list := func() {
		var page struct {
			Items []struct {
				Progress *struct{ Completed, Total int } `json:"checklist_progress"`
			}
		}
		h.json("GET", "/v1/sessions?limit=50", nil, http.StatusOK, &page)
		if len(page.Items) != 50 || page.Items[0].Progress == nil || page.Items[0].Progress.Completed != 1 {
			b.Fatalf("%d sessions, first %+v", len(page.Items), page.Items[0].Progress)
		}
	}
	b.Run("unchanged", func(b *testing.B) {
		list()
		for b.Loop() {
			list()
		}
	})
	b.Run("moved", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			for _, id := range ids {
				if _, err := store.Append(b.Context(), id, []session.Row{text("more")}); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			list()
		}
	})
}
