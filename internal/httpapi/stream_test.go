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
