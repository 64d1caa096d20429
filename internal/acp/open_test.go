package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
)

type noClient struct{}

func (noClient) Handle(context.Context, *jsonrpc.Request) (any, error) {
	return nil, errors.New("unexpected request")
}
func (noClient) HandleNotification(context.Context, *jsonrpc.Notification) {}

// serveOpening runs Serve with open as Options.Open and returns a client
// and the channel Serve's result arrives on.
func serveOpening(t *testing.T, open func(context.Context) (*host.Host, error)) (*jsonrpc.Conn, chan error) {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		err := Serve(t.Context(), sr, sw, Options{Open: open, Version: "test", Profiles: []string{"test"}})
		sw.Close()
		done <- err
	}()
	client := jsonrpc.NewConn(cr, cw, noClient{}, jsonrpc.Options{})
	go func() { _ = client.Serve(t.Context()) }()
	t.Cleanup(func() {
		// The client stops reading when the test's context ends, so the
		// server's writes fail rather than block on a pipe nobody reads.
		cw.Close()
		cr.Close()
		<-finished
	})
	return client, done
}

// TestInitializeDoesNotWaitForTheHost: the handshake is answered while the
// host is still opening; a session request waits for it.
func TestInitializeDoesNotWaitForTheHost(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`})
	release := make(chan struct{})
	client, _ := serveOpening(t, func(context.Context) (*host.Host, error) {
		<-release
		return h.host, nil
	})
	var init InitializeResponse
	if err := client.Call(t.Context(), "initialize", InitializeRequest{ProtocolVersion: 1}, &init); err != nil {
		t.Fatalf("initialize while the host opens: %v", err)
	}
	if init.AgentInfo == nil || init.AgentInfo.Version != "test" {
		t.Fatalf("initialize = %+v", init)
	}
	created := make(chan error, 1)
	var resp NewSessionResponse
	go func() {
		created <- client.Call(t.Context(), "session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
	}()
	close(release)
	if err := <-created; err != nil || resp.SessionID == "" {
		t.Fatalf("session/new once the host is open: %v %+v", err, resp)
	}
	if _, err := h.host.Store().Get(t.Context(), resp.SessionID); err != nil {
		t.Fatalf("the session is not in the opened host's store: %v", err)
	}
}

// TestOpenFailureEndsServe: a host that fails to open fails the requests
// waiting for it and ends Serve with the error, for the caller's exit code.
func TestOpenFailureEndsServe(t *testing.T) {
	boom := errors.New("database is locked")
	release := make(chan struct{})
	client, done := serveOpening(t, func(context.Context) (*host.Host, error) {
		<-release
		return nil, boom
	})
	if err := client.Call(t.Context(), "initialize", InitializeRequest{ProtocolVersion: 1}, &InitializeResponse{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	created := make(chan error, 1)
	go func() {
		created <- client.Call(t.Context(), "session/new", NewSessionRequest{Cwd: t.TempDir(), McpServers: []json.RawMessage{}}, nil)
	}()
	close(release)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Serve = %v, want the open error", err)
	}
	if err := <-created; err == nil {
		t.Fatal("session/new succeeded on a host that failed to open")
	}
}

// TestOpenWaitsForTheClient: the host opens once the client asks for
// something; a connection that ends without a request never opens it.
func TestOpenWaitsForTheClient(t *testing.T) {
	var opened atomic.Bool
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	defer cr.Close()
	cw.Close() // the client goes at once
	err := Serve(t.Context(), sr, sw, Options{Open: func(context.Context) (*host.Host, error) {
		opened.Store(true)
		return nil, errors.New("opened")
	}})
	if err != nil || opened.Load() {
		t.Fatalf("Serve = %v, opened %v: want nil, never opened", err, opened.Load())
	}
}
