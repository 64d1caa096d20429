package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/sqlite"
)

// openStream sends GET path on a raw connection and reads the response
// up to the end of its first SSE block (retry:), leaving the rest unread.
func openStream(t *testing.T, addr, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, addr, token)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("open %s: %v %v", path, res, err)
	}
	return c, br
}

// A client that stops reading, and so is gone for all the server can
// tell (a vanished client's kernel stops acknowledging; this one's window
// stays shut), is found by a write that cannot finish within the write
// timeout: its stream ends and its connection is closed. Without the
// deadline the stream's goroutine would wait in Write for ever.
func TestStreamOfAClientThatStoppedReadingIsReleased(t *testing.T) {
	h := newHarnessAPI(t, `[]`, nil, func(o *httpapi.Options) { o.WriteTimeout = 20 * time.Millisecond })
	released := make(chan struct{}, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.api.ServeHTTP(w, r)
		if r.URL.Path == "/v1/events" {
			released <- struct{}{}
		}
	}))
	// Small socket buffers on both sides, so a few writes fill them.
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		c.(*net.TCPConn).SetWriteBuffer(4096)
		return ctx
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c, _ := openStream(t, srv.Listener.Addr().String(), "/v1/events")
	c.(*net.TCPConn).SetReadBuffer(4096)

	pad := strings.Repeat("x", 32<<10)
	entries := make([]sqlite.FeedEntry, 64) // 2 MiB: more than any loopback buffer holds
	for i := range entries {
		entries[i] = sqlite.FeedEntry{SessionID: "s", Type: "pad", Data: json.RawMessage(`{"pad":"` + pad + `"}`)}
	}
	if _, err := h.db.Feed().Append(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	// A bound on a failure, not a measure of speed: without the write
	// deadline this never comes.
	select {
	case <-released:
	case <-time.After(time.Minute):
		t.Fatal("the stream of a client that stopped reading was never released")
	}
	// Its connection is closed: reading what was buffered ends.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("the released connection stays open: %v", err)
	}
}

// meka serve prunes the feed at start: a client resuming from before
// what is kept gets one feed.reset (expired, with the bounds), then the
// oldest event kept, and the ids go on past it.
func TestServePrunesTheFeed(t *testing.T) {
	later := time.Now().Add(48 * time.Hour)
	h := newHarnessAPI(t, `[]`, nil, func(o *httpapi.Options) {
		o.FeedRetention = 24 * time.Hour
		o.Now = func() time.Time { return later }
	})
	evs, err := h.db.Feed().Append(t.Context(), []sqlite.FeedEntry{
		{SessionID: "s", Type: "notice", Data: json.RawMessage(`{"severity":"info","title":"a"}`)},
		{SessionID: "s", Type: "notice", Data: json.RawMessage(`{"severity":"info","title":"b"}`)},
		{SessionID: "s", Type: "notice", Data: json.RawMessage(`{"severity":"info","title":"c"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- h.api.Serve(ctx, l) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	_, br := openStream(t, l.Addr().String(), "/v1/events?after="+fmt.Sprint(evs[0].ID))
	var got []string
	for len(got) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			got = append(got, strings.TrimSpace(strings.TrimPrefix(line, "data: ")))
		}
	}
	var reset struct {
		Type string
		Data struct {
			Reason             string
			OldestID, LatestID int64 `json:"-"`
		}
	}
	json.Unmarshal([]byte(got[0]), &reset)
	last := evs[2].ID
	if reset.Type != "feed.reset" || reset.Data.Reason != "expired" ||
		!strings.Contains(got[0], fmt.Sprintf(`"oldest_id":%d,"latest_id":%d`, last, last)) {
		t.Fatalf("first frame %s, want feed.reset expired with oldest and latest %d", got[0], last)
	}
	if !strings.Contains(got[1], fmt.Sprintf(`"id":"%d"`, last)) || !strings.Contains(got[1], `"title":"c"`) {
		t.Fatalf("after the reset %s, want the oldest kept, %d", got[1], last)
	}
	if lo, _, _ := h.db.Feed().Bounds(t.Context()); lo != last {
		t.Fatalf("the feed starts at %d after serve pruned it, want %d", lo, last)
	}
}

// Event streams are capped, 64 on one session (its own feed and
// /v1/events?session= together) and 256 in all: one more is refused with
// 503 too-many-streams and Retry-After, and a stream that ends gives its
// place back.
func TestEventStreamsAreCapped(t *testing.T) {
	h := newHarness(t, `[]`)
	addr := strings.TrimPrefix(h.srv.URL, "http://")
	var s, other sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &other)
	refused := func(path, want string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", h.srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable { // a stream: its body never ends
			t.Fatalf("GET %s past the cap: %d, want 503", path, res.StatusCode)
		}
		body, _ := io.ReadAll(res.Body)
		h.spec.check(t, "GET", req.URL.Path, res, body)
		var p struct{ Code, Detail string }
		json.Unmarshal(body, &p)
		if p.Code != "too-many-streams" || res.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, want) {
			t.Fatalf("GET %s past the cap: %s (Retry-After %q), want too-many-streams saying %q", path, body, res.Header.Get("Retry-After"), want)
		}
	}

	var first net.Conn
	for i := range 64 {
		path := "/v1/sessions/" + s.ID + "/events"
		if i%2 == 1 {
			path = "/v1/events?session=" + s.ID
		}
		c, _ := openStream(t, addr, path)
		if first == nil {
			first = c
		}
	}
	refused("/v1/sessions/"+s.ID+"/events", "this session has 64")
	refused("/v1/events?session="+s.ID, "this session has 64")
	openStream(t, addr, "/v1/sessions/"+other.ID+"/events") // another session is not held to this one's cap

	// A closed stream's place is given back once the server has seen it go.
	first.Close()
	for {
		var rt struct{ Streams int }
		h.json("GET", "/v1/runtime", nil, http.StatusOK, &rt)
		if rt.Streams == 64 {
			break
		}
	}
	openStream(t, addr, "/v1/sessions/"+s.ID+"/events")

	for range 256 - 65 {
		openStream(t, addr, "/v1/events")
	}
	refused("/v1/events", "the server has 256")
	refused("/v1/sessions/"+other.ID+"/events", "the server has 256")
}
