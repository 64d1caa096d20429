package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"meka.dev/meka/internal/sqlite"
)

// historyPage is a page of GET /v1/sessions/ID/history.
type historyPage struct {
	Items []struct {
		ID, Type string
		Data     json.RawMessage
	}
	LastID     string  `json:"last_id"`
	NextCursor *string `json:"next_cursor"`
	PrevCursor *string `json:"prev_cursor"`
}

// A client reading a session's history from its end (?tail=, then
// ?before=prev_cursor) and streaming after the tail's last_id sees every
// event of the session once, in order, while events are appended to it
// and to another session all along: the pages back and the stream meet
// at last_id with nothing missed or repeated.
func TestHistoryTailPagesBackAndStreamsOn(t *testing.T) {
	h := newHarness(t, `[]`)
	var s, other sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &other)
	feed := h.db.Feed()
	notice := func(sid string, n int) sqlite.FeedEntry {
		return sqlite.FeedEntry{SessionID: sid, Type: "notice", Data: json.RawMessage(`{"severity":"info","title":"n","text":"` + strconv.Itoa(n) + `"}`)}
	}
	const before, during = 40, 60
	for n := range before {
		if _, err := feed.Append(t.Context(), []sqlite.FeedEntry{notice(s.ID, n), notice(other.ID, n)}); err != nil {
			t.Fatal(err)
		}
	}
	// A writer appends the rest as the pages are read: a pair of events
	// after each page, then what is left once the reader is done.
	read, written := make(chan struct{}), make(chan error, 1)
	go func() {
		pages := read
		for n := before; n < before+during; n++ {
			if pages != nil {
				if _, ok := <-pages; !ok {
					pages = nil
				}
			}
			if _, err := feed.Append(t.Context(), []sqlite.FeedEntry{notice(other.ID, n), notice(s.ID, n)}); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()

	base := "/v1/sessions/" + s.ID + "/history"
	var tail historyPage
	h.json("GET", base+"?tail=7", nil, http.StatusOK, &tail)
	if len(tail.Items) != 7 || tail.PrevCursor == nil || *tail.PrevCursor != tail.Items[0].ID || tail.NextCursor != nil {
		t.Fatalf("tail %+v", tail)
	}
	if eventID(t, tail.LastID) < eventID(t, tail.Items[6].ID) {
		t.Fatalf("tail's last_id %s is before its last event %s", tail.LastID, tail.Items[6].ID)
	}
	read <- struct{}{}
	live := h.stream("/v1/sessions/"+s.ID+"/events", tail.LastID)
	seen := texts(t, tail)
	for cursor := tail.PrevCursor; cursor != nil; {
		var page historyPage
		h.json("GET", base+"?before="+*cursor+"&limit=9", nil, http.StatusOK, &page)
		if len(page.Items) == 0 || len(page.Items) > 9 || eventID(t, page.Items[len(page.Items)-1].ID) >= eventID(t, *cursor) {
			t.Fatalf("page before %s: %+v", *cursor, page)
		}
		seen = append(texts(t, page), seen...)
		cursor = page.PrevCursor
		read <- struct{}{}
	}
	close(read)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	for len(seen) < before+during {
		f, ok := live()
		if !ok {
			t.Fatalf("stream ended after %d events", len(seen))
		}
		if f.ID == "" {
			continue
		}
		if f.Type != "notice" {
			t.Fatalf("streamed %s %s after the session's creation", f.Type, f.ID)
		}
		seen = append(seen, f.Data["text"].(string))
	}
	for n, text := range seen {
		if text != strconv.Itoa(n) {
			t.Fatalf("event %d of the session read as %q: %v", n, text, seen)
		}
	}
	// The pages back read the same events as the forward history.
	var all historyPage
	h.json("GET", base, nil, http.StatusOK, &all)
	if got := texts(t, all); strings.Join(got, " ") != strings.Join(seen, " ") {
		t.Fatalf("forward history %v, paged back and streamed %v", got, seen)
	}
	// A tail longer than the session is the whole of it.
	var whole historyPage
	h.json("GET", base+"?tail=10000", nil, http.StatusOK, &whole)
	if whole.PrevCursor != nil || len(whole.Items) != len(all.Items) || whole.Items[0].Type != "session.created" {
		t.Fatalf("tail of everything: %d items, prev %v", len(whole.Items), whole.PrevCursor)
	}
}

func eventID(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", s, err)
	}
	return n
}

// texts are the numbers the test's notices carry, in the page's order.
func texts(t *testing.T, p historyPage) []string {
	t.Helper()
	var out []string
	for _, it := range p.Items {
		if it.Type != "notice" {
			continue // the session's session.created
		}
		var d struct{ Text string }
		if err := json.Unmarshal(it.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Text)
	}
	return out
}

// A cursor the history cannot page by is a 400 naming it, and the
// history asks for the API's token as the other routes do.
func TestHistoryBackRefusesBadCursors(t *testing.T) {
	h := newHarness(t, `[]`)
	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	base := "/v1/sessions/" + s.ID + "/history"
	for _, q := range []string{"?before=x", "?before=0", "?before=-3", "?before=", "?tail=0", "?tail=x", "?tail=10001",
		"?tail=5&before=3", "?after=1&before=3", "?after=1&tail=5"} {
		code, b, _ := h.do("GET", base+q, nil)
		var p struct{ Code string }
		json.Unmarshal(b, &p)
		if code != http.StatusBadRequest || p.Code != "cursor-invalid" {
			t.Errorf("%s: %d %s", q, code, b)
		}
	}
	var fresh historyPage
	h.json("GET", base+"?tail=20", nil, http.StatusOK, &fresh)
	if len(fresh.Items) != 1 || fresh.Items[0].Type != "session.created" || fresh.PrevCursor != nil {
		t.Fatalf("tail of a new session %+v", fresh)
	}
	for _, q := range []string{"?tail=5", "?before=3&limit=2"} {
		res, err := http.Get(h.srv.URL + base + q)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", q, res.StatusCode)
		}
	}
	if code, _, _ := h.do("GET", "/v1/sessions/nope/history?tail=5", nil); code != http.StatusNotFound {
		t.Errorf("tail of an unknown session: %d", code)
	}
}

// BenchmarkHistory is what a page opening a session waits for before its
// first screen, served and decoded as JSON: the session's whole history
// (every page forwards), or its last 300 events (?tail=300), over
// sessions of 2,000 and 20,000 events of about 260 bytes. The tail's
// time should not grow with the session.
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		h := newHarness(b, `[]`)
		h.spec = nil // measure the server, not the schema check
		var s sessionRec
		h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
		for i := 0; i < n; i += 500 {
			batch := make([]sqlite.FeedEntry, 500)
			for j := range batch {
				batch[j] = sqlite.FeedEntry{SessionID: s.ID, Type: "tool.finished", Data: []byte(`{"call_id":"c` + strconv.Itoa(i+j) + `","tool":"file_read","status":"failed","result":"` + strings.Repeat("x", 120) + `","truncated":false}`)}
			}
			if _, err := h.db.Feed().Append(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
		}
		base := "/v1/sessions/" + s.ID + "/history"
		b.Run(fmt.Sprintf("events=%d/whole", n), func(b *testing.B) {
			for b.Loop() {
				got := 0
				for path := base; path != ""; {
					var p historyPage
					h.json("GET", path, nil, http.StatusOK, &p)
					got += len(p.Items)
					path = ""
					if p.NextCursor != nil {
						path = base + "?after=" + *p.NextCursor
					}
				}
				if got != n+1 {
					b.Fatalf("%d events", got)
				}
			}
		})
		b.Run(fmt.Sprintf("events=%d/tail", n), func(b *testing.B) {
			for b.Loop() {
				var p historyPage
				h.json("GET", base+"?tail=300", nil, http.StatusOK, &p)
				if len(p.Items) != 300 {
					b.Fatalf("%d events", len(p.Items))
				}
			}
		})
	}
}
