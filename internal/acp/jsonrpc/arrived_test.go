package jsonrpc

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
)

// TestArrivedPrecedesLaterMessages: what Arrived records for a request is
// there when the notification after it on the wire is handled, even though
// the request's handler has not started.
func TestArrivedPrecedesLaterMessages(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	release := make(chan struct{})
	got := make(chan string, 1)
	h := funcs{
		handle: func(ctx context.Context, req *Request) (any, error) {
			<-release
			return struct{}{}, nil
		},
		notify: func(ctx context.Context, n *Notification) {
			mu.Lock()
			defer mu.Unlock()
			got <- seen[`"p-1"`]
		},
	}
	p := newPeer(t, h, Options{Arrived: func(req *Request) {
		mu.Lock()
		defer mu.Unlock()
		seen[string(req.ID)] = req.Method
	}})
	p.send(`{"jsonrpc":"2.0","id":"p-1","method":"session/prompt","params":{}}`)
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	if m := <-got; m != "session/prompt" {
		t.Fatalf("the notification saw %q", m)
	}
	close(release)
	if w := p.recv(); string(w.ID) != `"p-1"` {
		t.Fatalf("response %s", w.raw)
	}
}

// TestNotificationArrivedPrecedesLaterRequests: what NotificationArrived
// records for a notification is there when the request after it on the
// wire is handled, even though the notification's handler is held up.
func TestNotificationArrivedPrecedesLaterRequests(t *testing.T) {
	var mu sync.Mutex
	var noted []string
	release := make(chan struct{})
	h := funcs{
		handle: func(ctx context.Context, req *Request) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			return noted, nil
		},
		notify: func(ctx context.Context, n *Notification) { <-release },
	}
	p := newPeer(t, h, Options{NotificationArrived: func(n *Notification) {
		mu.Lock()
		defer mu.Unlock()
		noted = append(noted, n.Method)
	}})
	p.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}`)
	if w := p.recv(); string(w.Result) != `["session/cancel"]` {
		t.Fatalf("the request saw %s", w.raw)
	}
	close(release)
}

func TestStringMember(t *testing.T) {
	cases := []struct {
		params, name, want string
		ok                 bool
	}{
		{`{"prompt":[{"type":"text","text":"a \"quoted\" {brace"}],"sessionId":"s1"}`, "sessionId", "s1", true},
		{`{"sessionId":"s\u0031"}`, "sessionId", "s1", true},
		{`{"sessionId":"a","sessionId":"b"}`, "sessionId", "b", true},
		{`{"sessionid":"s1"}`, "sessionId", "", false},
		{`{"sessionId":7}`, "sessionId", "", false},
		{`["sessionId"]`, "sessionId", "", false},
		{``, "sessionId", "", false},
	}
	for _, tc := range cases {
		got, ok := StringMember(json.RawMessage(tc.params), tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("StringMember(%s) = %q, %v; want %q, %v", tc.params, got, ok, tc.want, tc.ok)
		}
	}
}
