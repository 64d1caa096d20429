package lsp_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/lsp"
)

// timers is an lsp.Options.AfterFunc whose timers the test fires.
type timers struct {
	// made receives each timer as it is made.
	made chan *timer
}

type timer struct {
	d      time.Duration
	f      func()
	mu     sync.Mutex // guards resets
	resets int
}

func (t *timer) Stop() bool { return true }

func (t *timer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resets++
	return true
}

func (t *timer) resetCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.resets
}

func (ts *timers) afterFunc(d time.Duration, f func()) lsp.Timer {
	t := &timer{d: d, f: f}
	ts.made <- t
	return t
}

func idleManager(t *testing.T, mode string) (*lsp.Manager, *timers) {
	t.Helper()
	ts := &timers{made: make(chan *timer, 8)}
	m := lsp.New(lsp.Options{
		Servers:     map[string][]string{"go": {fakeServer(t), mode}},
		Wait:        time.Minute,
		IdleTimeout: 7 * time.Minute,
		AfterFunc:   ts.afterFunc,
		Env:         os.Environ(),
	})
	t.Cleanup(func() { m.Close() })
	return m, ts
}

// A server nobody asked for during the idle timeout is stopped when its
// timer fires, without a notice; each call restarts the timer, and the
// next call after the stop starts a server again.
func TestIdleServerIsStopped(t *testing.T) {
	m, ts := idleManager(t, "echo")
	root := t.TempDir()
	path := filepath.Join(root, "a.go")
	if r := diagnose(t, m, root, path, "package a\n// bad\n"); !r.Fresh || len(r.Diagnostics) != 1 {
		t.Fatalf("first report = %+v", r)
	}
	first := <-ts.made
	if first.d != 7*time.Minute {
		t.Errorf("idle timer set for %s, want the idle timeout", first.d)
	}
	if first.resetCount() != 1 {
		t.Errorf("the call ended with %d resets of the idle timer, want 1", first.resetCount())
	}
	diagnose(t, m, root, path, "package a\n")
	if first.resetCount() != 2 {
		t.Errorf("a second call: %d resets, want 2", first.resetCount())
	}
	if n := m.Running(); n != 1 {
		t.Fatalf("running = %d before the timeout", n)
	}

	first.f()
	if n := m.Running(); n != 0 {
		t.Fatalf("running = %d after the idle timeout, want the server stopped", n)
	}
	r := diagnose(t, m, root, path, "package a\n// bad\n")
	if !r.Fresh || len(r.Diagnostics) != 1 || r.Notice != "" {
		t.Fatalf("after the idle stop = %+v, want a new server's diagnostics and no notice", r)
	}
	if second := <-ts.made; second == first {
		t.Fatal("no new server started")
	}
	if n := m.Running(); n != 1 {
		t.Errorf("running = %d, want the new server", n)
	}
}

// An idle timer that fires while a call waits on the server stops
// nothing; once the call ends, the restarted timer does.
func TestIdleTimerWaitsForCalls(t *testing.T) {
	m, ts := idleManager(t, "hang")
	root := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan lsp.Report)
	go func() {
		done <- m.Diagnose(ctx, lsp.Request{Path: filepath.Join(root, "a.go"), Root: root, Content: []byte("package a\n"), Unconfined: true})
	}()
	idle := <-ts.made
	// The server is registered, and the call counted on it, under the
	// lock Running takes.
	if n := m.Running(); n != 1 {
		t.Fatalf("running = %d", n)
	}
	idle.f()
	if n := m.Running(); n != 1 {
		t.Fatalf("running = %d: the timer stopped a server a call waits on", n)
	}
	cancel()
	<-done
	if idle.resetCount() != 1 {
		t.Fatalf("the call's end reset the timer %d times, want 1", idle.resetCount())
	}
	idle.f()
	if n := m.Running(); n != 0 {
		t.Fatalf("running = %d after the timeout with no call", n)
	}
}
