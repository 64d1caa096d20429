// Package acp is meka's Agent Client Protocol front door: `meka acp`
// speaks ACP v1 over stdio (newline-delimited JSON-RPC 2.0 through
// internal/acp/jsonrpc) so editors can drive sessions on the host. It owns
// the ACP wire types (only this package knows them), the translation of
// requests to host calls and of engine events and session rows to
// session/update notifications, the ordering editors rely on, permission
// prompts, file routing through fs/*, and the terminal _meta extension.
//
// It imports internal/host, plan, permission, session, model, agent, tool
// and its own jsonrpc layer; never another front door.
package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/permission"
)

// Defaults for Options' zero values.
const (
	// DefaultMaxLineBytes bounds one inbound message: a prompt with a
	// large pasted image or file fits.
	DefaultMaxLineBytes = 64 << 20
	// DefaultIdleTimeout is how long a session may go untouched before the
	// sweep releases it, and DefaultSweepInterval how often it looks.
	DefaultIdleTimeout   = 24 * time.Hour
	DefaultSweepInterval = 5 * time.Minute
	// ReplayRows is how many of a session's newest rows session/load
	// replays.
	ReplayRows = 2000
)

// Options configure a server. The zero value of each field means its
// default.
type Options struct {
	// Host runs the sessions. Open, set instead, opens it: Serve calls it
	// once initialize is answered (or at the first other request), so an
	// editor's handshake waits neither for the database nor shares the
	// machine with its opening; every other request waits for the host,
	// and Open's error ends Serve with that error.
	Host *host.Host
	Open func(context.Context) (*host.Host, error)
	// Admission, when set with Open, decides session/new without the
	// host (from the configuration the host is opened with): the session
	// is answered at once, and stored and built once the host is open.
	// The host then opens at the first request other than initialize, and
	// after session/new's answer, not beside it: on a machine with few
	// cores, the answer would wait for one. nil waits for the host and
	// admits with its own.
	Admission *host.Admission
	// Version is meka's version, sent as agentInfo.version.
	Version string
	// Profiles names the configured profiles, in the order the profile
	// picker lists them.
	Profiles []string
	// DefaultProfile names the profile a new session gets; empty means
	// the host's default, whose name is Profiles' first when unknown.
	DefaultProfile string
	// Vision is the default profile's vision flag, advertised as
	// promptCapabilities.image.
	Vision bool
	// Levels are the permission levels sessions may take ([permissions]
	// enabled); empty means all.
	Levels []permission.Level
	// Confinement says, for a session at a level, which guarantees no
	// confinement backend here can give and what to do, or "" when its
	// commands run confined (or need no confinement); nil says nothing.
	// A session told so refuses its commands: the notice says why.
	Confinement func(permission.Level) string
	// RelayProviderErrors lets a provider's own error text reach the
	// client in an InternalError's data, capped.
	RelayProviderErrors bool
	MaxLineBytes        int
	IdleTimeout         time.Duration
	SweepInterval       time.Duration
	// Tick returns a channel ticking every d and a function stopping it,
	// for the idle sweep; a time.Ticker when nil.
	Tick   func(d time.Duration) (<-chan time.Time, func())
	Logger *slog.Logger
}

// Serve speaks ACP on r and w until r ends or ctx is done. Every session
// the connection opened is closed before it returns.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	s := newServer(opts)
	s.conn = jsonrpc.NewConn(r, w, s, s.connOptions())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.base = ctx
	s.openServe = s.opener(ctx, cancel)
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		s.sweepLoop(ctx)
	}()
	err := s.conn.Serve(ctx)
	// The sessions session/new answered are stored and built before ctx
	// ends: the host may still be opening for them.
	s.awaitBuilds()
	cancel()
	<-sweepDone
	// A connection that never asked for anything never opened the host.
	s.opening.Do(func() { close(s.ready) })
	<-s.ready
	if s.openErr != nil {
		return s.openErr
	}
	s.closeAll(context.WithoutCancel(ctx))
	return err
}

// opener opens the host with Options.Open; a failure cancels the
// connection with cancel.
func (s *server) opener(ctx context.Context, cancel context.CancelFunc) func() {
	return func() {
		defer close(s.ready)
		h, err := s.opts.Open(ctx)
		if err != nil {
			s.openErr = err
			cancel()
			return
		}
		s.host = h
	}
}

// startOpen opens the host in the background, once: after initialize is
// answered (after session/new's answer with an Admission), or at the
// first other request, so that the handshake does not share the machine
// with the database and the sandbox probes.
func (s *server) startOpen() {
	s.opening.Do(func() { go s.openServe() })
}

// awaitHost waits until the host is open; it fails only when the
// request is cancelled or the host failed to open, which ends the
// connection.
func (s *server) awaitHost(ctx context.Context) error {
	select {
	case <-s.ready:
		if s.host == nil {
			return jsonrpc.NewError(jsonrpc.InternalError, "meka failed to start", nil)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// admission is what decides session/new: Options.Admission, else the
// host's own once it is open.
func (s *server) admission(ctx context.Context) (host.Admission, error) {
	if s.opts.Admission != nil {
		return *s.opts.Admission, nil
	}
	if err := s.awaitHost(ctx); err != nil {
		return host.Admission{}, err
	}
	return s.host.Admission(), nil
}

// openHost returns the host if it is open, nil while it opens.
func (s *server) openHost() *host.Host {
	select {
	case <-s.ready:
		return s.host
	default:
		return nil
	}
}

// connOptions are the JSON-RPC layer's options: the line limit and the
// arrival hooks that order cancels against prompts.
func (s *server) connOptions() jsonrpc.Options {
	return jsonrpc.Options{MaxLineBytes: s.opts.MaxLineBytes, Logger: s.log,
		Arrived: s.arrivals.arrived, NotificationArrived: s.noted}
}

// server is one connection's state.
type server struct {
	opts Options
	// host, or openErr, is set before ready closes, and never changes
	// after; opening starts openServe (Serve's, when Options.Open is set).
	host      *host.Host
	openErr   error
	ready     chan struct{}
	opening   sync.Once
	openServe func()
	conn      *jsonrpc.Conn
	log       *slog.Logger
	// base lives as long as the connection: updates outside a request are
	// sent with it.
	base context.Context

	mu         sync.Mutex // guards the fields below
	client     ClientCapabilities
	clientInfo *Implementation
	sessions   map[string]*entry
	// swept are sessions the idle sweep released; a request naming one
	// reopens it.
	swept map[string]bool
	// building are the sessions session/new answered whose engines are
	// still being built (build.go).
	building map[string]*building

	arrivals *arrivals
}

func newServer(opts Options) *server {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if opts.Tick == nil {
		opts.Tick = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if len(opts.Levels) == 0 {
		opts.Levels = permission.Levels
	}
	s := &server{opts: opts, log: opts.Logger, base: context.Background(), ready: make(chan struct{}),
		sessions: make(map[string]*entry), swept: make(map[string]bool), building: make(map[string]*building),
		arrivals: newArrivals()}
	if opts.Open == nil {
		s.host = opts.Host
		s.opening.Do(func() { close(s.ready) })
	}
	return s
}

// caps returns the client's capabilities.
func (s *server) caps() ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// Handle implements jsonrpc.Handler.
func (s *server) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	if req.Method == "initialize" {
		if s.opts.Admission == nil {
			defer s.startOpen()
		}
	} else if req.Method != "authenticate" {
		var err error
		if req.Method == "session/new" && s.opts.Admission != nil {
			// Answered from its admission: the host opens after the
			// answer, which does not wait for a core beside its opening.
			jsonrpc.AfterResponse(ctx, s.startOpen)
		} else {
			s.startOpen()
			err = s.awaitHost(ctx)
		}
		if err == nil {
			err = s.awaitBuild(ctx, req.Params)
		}
		if err != nil {
			if req.Method == "session/prompt" {
				s.arrivals.take(string(req.ID))
			}
			return nil, err
		}
	}
	switch req.Method {
	case "initialize":
		return handle(ctx, s, req, (*server).initialize)
	case "authenticate":
		return struct{}{}, nil
	case "session/new":
		return handle(ctx, s, req, (*server).newSession)
	case "session/load":
		return handle(ctx, s, req, (*server).loadSession)
	case "session/resume":
		return handle(ctx, s, req, (*server).resumeSession)
	case "session/fork":
		return handle(ctx, s, req, (*server).forkSession)
	case "session/list":
		return handle(ctx, s, req, (*server).listSessions)
	case "session/close":
		return handle(ctx, s, req, (*server).closeSession)
	case "session/delete":
		return handle(ctx, s, req, (*server).deleteSession)
	case "session/prompt":
		var p PromptRequest
		if err := decodeParams(req.Params, &p); err != nil {
			s.arrivals.take(string(req.ID))
			return nil, err
		}
		return s.prompt(ctx, string(req.ID), &p)
	case "session/set_mode":
		return handle(ctx, s, req, (*server).setMode)
	case "session/set_config_option":
		return handle(ctx, s, req, (*server).setConfigOption)
	}
	return nil, jsonrpc.NewError(jsonrpc.MethodNotFound, "Method not found", map[string]string{"method": req.Method})
}

// handle decodes a request's params into P and calls fn.
func handle[P, R any](ctx context.Context, s *server, req *jsonrpc.Request, fn func(*server, context.Context, *P) (R, error)) (any, error) {
	var p P
	if err := decodeParams(req.Params, &p); err != nil {
		return nil, err
	}
	return fn(s, ctx, &p)
}

func decodeParams(raw json.RawMessage, p any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, p); err != nil {
		return invalidParams("invalid params: %v", err)
	}
	return nil
}

// noted is the JSON-RPC layer's NotificationArrived hook. A cancel acts
// here, on the reader goroutine, so that it stops exactly the prompts read
// before it: those on their way latch (even when their session was swept
// and will be reopened by the prompt itself), the one in flight is
// cancelled, and a prompt read after it runs. It takes only short locks.
func (s *server) noted(n *jsonrpc.Notification) {
	if n.Method != "session/cancel" {
		return
	}
	sid, ok := jsonrpc.StringMember(n.Params, "sessionId")
	if !ok || sid == "" {
		return // HandleNotification logs it
	}
	s.arrivals.latch(sid)
	if e := s.lookup(sid); e != nil {
		e.cancelTurn()
	}
}

// HandleNotification implements jsonrpc.Handler. session/cancel has acted
// already, as it was read (noted).
func (s *server) HandleNotification(ctx context.Context, n *jsonrpc.Notification) {
	switch n.Method {
	case "session/cancel":
		var p SessionIDRequest
		if decodeParams(n.Params, &p) != nil || p.SessionID == "" {
			s.log.Debug("acp: session/cancel with invalid params")
		}
	default:
		s.log.Debug("acp: notification ignored", "method", n.Method)
	}
}

func (s *server) initialize(ctx context.Context, p *InitializeRequest) (*InitializeResponse, error) {
	s.mu.Lock()
	s.client = p.ClientCapabilities
	s.clientInfo = p.ClientInfo
	s.mu.Unlock()
	if p.ClientInfo != nil {
		s.log.Info("ACP client connected: " + p.ClientInfo.Name + " " + p.ClientInfo.Version)
	} else {
		s.log.Info("ACP client connected: (unnamed client)")
	}
	empty := &Empty{}
	return &InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: PromptCapabilities{Image: s.opts.Vision, EmbeddedContext: true},
			SessionCapabilities: SessionCapabilities{
				List: empty, Resume: empty, Fork: empty, Close: empty, Delete: empty, AdditionalDirectories: empty,
				SystemPrompt: empty,
			},
		},
		AuthMethods: []json.RawMessage{},
		AgentInfo:   &Implementation{Name: "meka", Version: s.opts.Version},
	}, nil
}

// notify sends a session/update. Updates that fail to go out (the client
// left) are logged: the log, not the wire, is the record.
func (s *server) notify(ctx context.Context, sessionID string, u SessionUpdate) {
	if err := s.conn.Notify(ctx, "session/update", SessionNotification{SessionID: sessionID, Update: u}); err != nil {
		s.log.Debug("acp: session/update not sent", "session_id", sessionID, "err", err)
	}
}

// sweepLoop releases idle sessions every SweepInterval.
func (s *server) sweepLoop(ctx context.Context) {
	select {
	case <-s.ready:
		if s.host == nil {
			return
		}
	case <-ctx.Done():
		return
	}
	tick, stop := s.opts.Tick(s.opts.SweepInterval)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			s.sweep(ctx)
		}
	}
}

// sweep releases the sessions idle for IdleTimeout.
func (s *server) sweep(ctx context.Context) {
	for _, id := range s.host.SweepIdle(ctx, s.opts.IdleTimeout) {
		s.mu.Lock()
		e := s.sessions[id]
		if e != nil {
			delete(s.sessions, id)
			s.swept[id] = true
		}
		s.mu.Unlock()
		if e != nil {
			e.detach()
			s.log.Info("acp: idle session released", "session_id", id)
		}
	}
}

// closeAll closes every session of the connection, once those being
// built are.
func (s *server) closeAll(ctx context.Context) {
	s.awaitBuilds()
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.sessions))
	for _, e := range s.sessions {
		entries = append(entries, e)
	}
	s.sessions = map[string]*entry{}
	s.mu.Unlock()
	for _, e := range entries {
		e.detach()
		if err := s.host.CloseSession(ctx, e.id); err != nil {
			s.log.Warn("acp: close session", "session_id", e.id, "err", err)
		}
	}
}
