package jsonrpc

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
)

func TestAfterResponseWritesAfterTheResponse(t *testing.T) {
	var conn *Conn
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		if err := conn.Notify(ctx, "before", nil); err != nil {
			return nil, err
		}
		AfterResponse(ctx, func() {
			_ = conn.Notify(ctx, "after1", map[string]int{"n": 1})
		})
		AfterResponse(ctx, func() {
			_ = conn.Notify(context.WithoutCancel(ctx), "after2", nil)
		})
		return map[string]string{"sessionId": "s1"}, nil
	}}
	p := newPeer(t, h, Options{})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","id":1,"method":"session/new"}`)
	var stream string
	for _, w := range p.recvN(4) {
		stream += w.raw
	}
	want := `{"jsonrpc":"2.0","method":"before"}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"after1","params":{"n":1}}` + "\n" +
		`{"jsonrpc":"2.0","method":"after2"}` + "\n"
	if stream != want {
		t.Fatalf("byte stream:\n%s\nwant:\n%s", stream, want)
	}
}

// While a request's AfterResponse hooks run, nothing else is written: here
// another request's response waits until the hook has sent both its
// notifications.
func TestAfterResponseHoldsTheOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hookStarted := make(chan struct{})
		release := make(chan struct{})
		var conn *Conn
		h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
			switch req.Method {
			case "first":
				AfterResponse(ctx, func() {
					_ = conn.Notify(ctx, "a", nil)
					close(hookStarted)
					<-release
					_ = conn.Notify(ctx, "b", nil)
				})
			case "second":
				<-hookStarted
			}
			return req.Method, nil
		}}
		p := newPeer(t, h, Options{})
		conn = p.conn
		p.send(`{"jsonrpc":"2.0","id":1,"method":"first"}`)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"second"}`)
		got := p.recvN(2)
		// An unrelated notification also waits for the hook.
		notified := make(chan error)
		go func() { notified <- conn.Notify(context.Background(), "other", nil) }()
		synctest.Wait() // "second"'s response and "other" are now waiting
		close(release)
		got = append(got, p.recvN(3)...)
		if err := <-notified; err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, w := range got {
			if w.Method != "" {
				order = append(order, w.Method)
			} else {
				order = append(order, string(w.Result))
			}
		}
		if order[0] != `"first"` || order[1] != "a" || order[2] != "b" {
			t.Fatalf("order %q: want \"first\", a, b, then the rest", order)
		}
	})
}

func TestAfterResponseRunsAtOnceOutsideARequest(t *testing.T) {
	ran := false
	AfterResponse(context.Background(), func() { ran = true })
	if !ran {
		t.Error("AfterResponse outside a request did not run fn")
	}

	var conn *Conn
	late := make(chan bool)
	h := funcs{
		handle: func(ctx context.Context, req *Request) (any, error) {
			// After the response is written, AfterResponse runs at once.
			AfterResponse(ctx, func() {
				ran := false
				AfterResponse(ctx, func() { ran = true })
				late <- ran
			})
			return nil, nil
		},
		notify: func(ctx context.Context, n *Notification) {
			ran := false
			AfterResponse(ctx, func() { ran = true })
			late <- ran
		},
	}
	p := newPeer(t, h, Options{})
	conn = p.conn
	_ = conn
	p.send(`{"jsonrpc":"2.0","id":1,"method":"x"}`)
	p.recv()
	if !<-late {
		t.Error("AfterResponse inside a hook did not run at once")
	}
	p.send(`{"jsonrpc":"2.0","method":"n"}`)
	if !<-late {
		t.Error("AfterResponse in a notification handler did not run at once")
	}
}

func TestAfterResponseHookPanicRecovered(t *testing.T) {
	var conn *Conn
	h := funcs{handle: func(ctx context.Context, req *Request) (any, error) {
		if req.Method == "panic" {
			AfterResponse(ctx, func() { panic("hook") })
		}
		return req.Method, nil
	}}
	p := newPeer(t, h, Options{})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","id":1,"method":"panic"}`)
	p.recv()
	// The output was released despite the panic.
	notified := make(chan error)
	go func() { notified <- conn.Notify(t.Context(), "still", nil) }()
	if w := p.recv(); w.Method != "still" {
		t.Fatalf("got %s", w.raw)
	}
	if err := <-notified; err != nil {
		t.Fatal(err)
	}
}

// A Call's response is delivered only after the notifications read before it
// were handled, so a client sees every update of a turn before its answer.
func TestCallWaitsForEarlierNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var seen []string
		h := funcs{notify: func(ctx context.Context, n *Notification) {
			<-release
			mu.Lock()
			seen = append(seen, n.Method)
			mu.Unlock()
		}}
		p := newPeer(t, h, Options{})
		var result string
		returned := make(chan error)
		go func() { returned <- p.conn.Call(t.Context(), "session/prompt", nil, &result) }()
		req := p.recv()
		p.send(`{"jsonrpc":"2.0","method":"session/update"}`)
		p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":"end_turn"}`)
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("Call returned (%v) before the earlier notification was handled", err)
		default:
		}
		close(release)
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 || result != "end_turn" {
			t.Fatalf("seen %v, result %q", seen, result)
		}
	})
}

// A notification handler may itself Call the peer: its response must not
// wait for the handler that awaits it.
func TestCallFromNotificationHandler(t *testing.T) {
	var conn *Conn
	done := make(chan error, 1)
	h := funcs{notify: func(ctx context.Context, n *Notification) {
		done <- conn.Call(ctx, "ask", nil, nil)
	}}
	p := newPeer(t, h, Options{})
	conn = p.conn
	p.send(`{"jsonrpc":"2.0","method":"trigger"}`)
	req := p.recv()
	p.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":null}`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
