package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

type noClient struct{}

func (noClient) Handle(context.Context, *jsonrpc.Request) (any, error) {
	return nil, errors.New("unexpected request")
}
func (noClient) HandleNotification(context.Context, *jsonrpc.Notification) {}

// serveOpening runs Serve with open as Options.Open (and adm as its
// Admission) and returns a client and the channel Serve's result arrives
// on.
func serveOpening(t *testing.T, open func(context.Context) (*host.Host, error), adm *host.Admission) (*jsonrpc.Conn, chan error) {
	client, done, _, _ := serveOpeningInput(t, open, adm)
	return client, done
}

// serveOpeningInput is serveOpening that also returns the server's
// input, for a client that leaves, and a channel closed once the server
// has read its end.
func serveOpeningInput(t *testing.T, open func(context.Context) (*host.Host, error), adm *host.Admission) (*jsonrpc.Conn, chan error, io.Closer, <-chan struct{}) {
	t.Helper()
	cr, sw := io.Pipe()
	pr, cw := io.Pipe()
	sr := &endReader{r: pr, ended: make(chan struct{})}
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		err := Serve(t.Context(), sr, sw, Options{Open: open, Admission: adm, Version: "test", Profiles: []string{"test"}})
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
	return client, done, cw, sr.ended
}

// endReader closes ended once r has ended.
type endReader struct {
	r     io.Reader
	once  sync.Once
	ended chan struct{}
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}

// TestInitializeDoesNotWaitForTheHost: the handshake is answered while the
// host is still opening; a session request waits for it.
func TestInitializeDoesNotWaitForTheHost(t *testing.T) {
	h := newHarness(t, harnessOptions{rounds: `[{"text":"hi"}]`})
	release := make(chan struct{})
	client, _ := serveOpening(t, func(context.Context) (*host.Host, error) {
		<-release
		return h.host, nil
	}, nil)
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
	// A listing waits for the session to be stored.
	var list ListSessionsResponse
	if err := client.Call(t.Context(), "session/list", ListSessionsRequest{}, &list); err != nil || len(list.Sessions) != 1 || list.Sessions[0].SessionID != resp.SessionID {
		t.Fatalf("session/list after session/new: %v %+v", err, list)
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
	}, nil)
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

// TestOpenFailureAfterAnsweredSession: with an Admission, session/new is
// answered before the host fails to open; the prompt that follows fails,
// and Serve still ends with the open error.
func TestOpenFailureAfterAnsweredSession(t *testing.T) {
	boom := errors.New("database is locked")
	release := make(chan struct{})
	adm := host.Admission{Permissions: host.Permissions{Default: permission.Workspace},
		Profile: func(string) (string, error) { return "test", nil }}
	client, done := serveOpening(t, func(context.Context) (*host.Host, error) {
		<-release
		return nil, boom
	}, &adm)
	if err := client.Call(t.Context(), "initialize", InitializeRequest{ProtocolVersion: 1}, &InitializeResponse{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var resp NewSessionResponse
	if err := client.Call(t.Context(), "session/new", NewSessionRequest{Cwd: t.TempDir(), McpServers: []json.RawMessage{}}, &resp); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	prompted := make(chan error, 1)
	go func() {
		prompted <- client.Call(t.Context(), "session/prompt", PromptRequest{SessionID: resp.SessionID, Prompt: []ContentBlock{TextBlock("hi")}}, nil)
	}()
	close(release)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("Serve = %v, want the open error", err)
	}
	if err := <-prompted; err == nil {
		t.Fatal("a prompt succeeded on a host that failed to open")
	}
}

// TestClientLeavesRightAfterNewSession: a client that leaves as soon as
// session/new is answered, before the host has opened, still has its
// session stored, and released, before Serve returns; the host's opening
// is not cancelled under it.
func TestClientLeavesRightAfterNewSession(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	release := make(chan struct{})
	adm := h.host.Admission()
	client, done, input, ended := serveOpeningInput(t, func(ctx context.Context) (*host.Host, error) {
		<-release
		// As opening the database would.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return h.host, nil
	}, &adm)
	if err := client.Call(t.Context(), "initialize", InitializeRequest{ProtocolVersion: 1}, &InitializeResponse{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var resp NewSessionResponse
	if err := client.Call(t.Context(), "session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp); err != nil {
		t.Fatalf("session/new: %v", err)
	}
	input.Close()
	<-ended
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if _, err := h.db.Sessions().Get(t.Context(), resp.SessionID); err != nil {
		t.Fatalf("the session answered is not stored: %v", err)
	}
	if _, err := h.db.Sessions().Lock(t.Context(), resp.SessionID, session.Holder{Token: "another"}); err != nil {
		t.Fatalf("the session's lock once Serve returned: %v", err)
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
