package httpapi_test

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"meka.dev/meka/internal/httpapi"
	"meka.dev/meka/internal/sqlite"
)

type sqliteOutbox struct{ o *sqlite.Outbox }

func (s sqliteOutbox) Fill(ctx context.Context, ep string, types []string, now time.Time, limit int) (int, error) {
	return s.o.Fill(ctx, ep, types, now, limit)
}
func (s sqliteOutbox) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]httpapi.Delivery, error) {
	ds, err := s.o.Claim(ctx, owner, now, lease, limit)
	out := make([]httpapi.Delivery, len(ds))
	for i, d := range ds {
		out[i] = httpapi.Delivery{ID: d.ID, Endpoint: d.Endpoint, Attempt: d.Attempt, Event: feedEvents([]sqlite.FeedEvent{d.Event})[0]}
	}
	return out, err
}
func (s sqliteOutbox) Settle(ctx context.Context, id int64, owner, status string, attempt int, next time.Time, e string) (bool, error) {
	return s.o.Settle(ctx, id, owner, status, attempt, next, e)
}
func (s sqliteOutbox) Disable(ctx context.Context, ep string) error { return s.o.Disable(ctx, ep) }

// receiver verifies every delivery with an independent Standard Webhooks
// implementation and answers from a per-message script.
type receiver struct {
	mu       sync.Mutex
	attempts map[string]int // by webhook-id
	types    map[string]string
	answers  map[string][]int // by event type: the statuses to answer, then 200
	got      chan string      // webhook-ids answered 2xx
	bad      chan error
}

func (rc *receiver) handler(wh *standardwebhooks.Webhook) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			rc.bad <- err
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var env struct{ Type string }
		_ = jsonUnmarshal(body, &env)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		n := rc.attempts[id]
		rc.attempts[id]++
		rc.types[id] = env.Type
		status := 200
		if a := rc.answers[env.Type]; n < len(a) {
			status = a[n]
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		if status/100 == 2 {
			rc.got <- id
		}
	}
}

// Two servers on one database: each message is delivered once, signed so
// that an independent verifier accepts it, retried after failures.
func TestWebhooksSignedRetriedAndSentOnce(t *testing.T) {
	h := newHarness(t, `[{"text":"hello"}]`)
	key := []byte("0123456789abcdefghijklmnopqrstuv")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := httpapi.ParseSecret(secret)
	if err != nil || string(parsed) != string(key) {
		t.Fatalf("secret: %v", err)
	}
	rc := &receiver{attempts: map[string]int{}, types: map[string]string{}, got: make(chan string, 16), bad: make(chan error, 16),
		answers: map[string][]int{"session.created": {500, 503}}}
	recv := httptest.NewServer(rc.handler(wh))
	defer recv.Close()

	hooks := []httpapi.Webhook{{Name: "ops", URL: recv.URL, Secret: parsed, Events: []string{"session.created", "turn.completed"}}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	// The first outbox fill sets the endpoint's cursor: it is owed what
	// happens from now on.
	if _, err := h.db.Outbox().Fill(ctx, "ops", hooks[0].Events, time.Now(), 10); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		db := h.db
		if i == 1 {
			var err error
			db, err = sqlite.Open(ctx, filepath.Join(filepath.Dir(h.dbPath()), "meka.db"), sqlite.Options{Feed: rowFeed})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
		}
		api, err := httpapi.New(httpapi.Options{Host: h.host, Feed: sqliteFeed{db.Feed()}, Token: token, Loopback: true,
			Webhooks: hooks, Outbox: sqliteOutbox{db.Outbox()}, RetrySchedule: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond},
			WebhookPoll: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); api.Serve(ctx, l) }()
	}

	var s sessionRec
	h.json("POST", "/v1/sessions", map[string]any{"cwd": h.cwd}, http.StatusCreated, &s)
	h.json("POST", "/v1/sessions/"+s.ID+"/turns", map[string]any{"input": []map[string]string{{"type": "text", "text": "hi"}}}, http.StatusAccepted, nil)
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case id := <-rc.got:
			if seen[id] {
				t.Fatalf("%s delivered twice", id)
			}
			seen[id] = true
		case err := <-rc.bad:
			t.Fatalf("signature refused: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("deliveries: %v", rc.attempts)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, typ := range rc.types {
		want := 1
		if typ == "session.created" {
			want = 3 // 500, 503, then 200
		}
		if rc.attempts[id] != want {
			t.Errorf("%s (%s): %d attempts, want %d", id, typ, rc.attempts[id], want)
		}
	}
}

// claimCounter is the outbox with its Claim calls counted: a call after a
// delivery means the round that made it has ended.
type claimCounter struct {
	sqliteOutbox
	mu     sync.Mutex
	claims int
	called chan struct{}
}

func (c *claimCounter) Claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]httpapi.Delivery, error) {
	c.mu.Lock()
	c.claims++
	c.mu.Unlock()
	select {
	case c.called <- struct{}{}:
	default:
	}
	return c.sqliteOutbox.Claim(ctx, owner, now, lease, limit)
}

func (c *claimCounter) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.claims }

// An endpoint slow enough to use up most of a batch's lease: the rest of
// the batch is not sent under a lease that may lapse mid-request (another
// host could send it too), but claimed again once the lease has lapsed.
func TestWebhookBatchStopsAtItsLease(t *testing.T) {
	h := newHarness(t, `[]`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := h.db.Outbox().Fill(ctx, "ops", []string{"*"}, time.Now(), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Feed().Append(ctx, []sqlite.FeedEntry{{SessionID: "s", Type: "notice", Data: []byte(`{}`)},
		{SessionID: "s", Type: "notice", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	var clockMu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	got := make(chan string, 4)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		advance(20 * time.Second) // as the server's clock sees it, 20 s of its 30 s lease
		got <- r.Header.Get("webhook-id")
	}))
	defer recv.Close()
	ob := &claimCounter{sqliteOutbox: sqliteOutbox{h.db.Outbox()}, called: make(chan struct{}, 1)}
	api, err := httpapi.New(httpapi.Options{Host: h.host, Feed: sqliteFeed{h.db.Feed()}, Token: token, Loopback: true,
		Webhooks: []httpapi.Webhook{{Name: "ops", URL: recv.URL, Secret: []byte("0123456789abcdefghijklmnopqrstuv"), Events: []string{"*"}}},
		Outbox:   ob, WebhookPoll: 5 * time.Millisecond, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); api.Serve(ctx, l) }()
	defer wg.Wait()
	defer cancel()

	wait := func(what string) string {
		select {
		case id := <-got:
			return id
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s delivery", what)
			return ""
		}
	}
	first := wait("first")
	// The round that sent the first has ended once Claim is called again.
	n := ob.count()
	for ob.count() <= n {
		select {
		case <-ob.called:
		case <-time.After(30 * time.Second):
			t.Fatal("no further round")
		}
	}
	select {
	case id := <-got:
		t.Fatalf("%s was sent after %s in the same round, past its lease", id, first)
	default:
	}
	advance(20 * time.Second) // the lease has lapsed: the second is claimed again
	if second := wait("second"); second == first {
		t.Fatalf("%s sent twice", first)
	}
}
