package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/httpapi/web"
	"meka.dev/meka/internal/schedule"
)

// Options configure a Server. The zero value of each field means its
// default where one is given.
type Options struct {
	// Host is the host whose sessions the server serves. The composition
	// root gives Opened to Host.OnOpen, so that a session the host opens
	// for another reason (a job of a session nobody held) is served too.
	Host *host.Host
	Feed FeedStore
	// Schedules is the scheduler's store and policy; nil when scheduling
	// is disabled, which the schedule endpoints report with 422 on create.
	Schedules *schedule.Scheduler
	// Token is the bearer every request but /v1/health must carry.
	Token string
	// Loopback says the server listens on a loopback address: the Host
	// header must then name loopback too (DNS rebinding).
	Loopback bool
	// Origins are the browser origins allowed; none by default.
	Origins []string
	// Profiles are the profile names a session may be moved to.
	Profiles []string
	// RelayProviderErrors lets a provider's own text reach clients.
	RelayProviderErrors bool
	// IdleTimeout releases sessions untouched this long, checked every
	// SweepInterval; zero means never.
	IdleTimeout, SweepInterval time.Duration
	// FeedRetention is how long feed events are kept, pruned at start
	// and every PruneInterval (DefaultPruneInterval when zero); zero
	// keeps them forever. A cursor older than what is kept gets
	// feed.reset.
	FeedRetention, PruneInterval time.Duration
	// Heartbeat is how often an idle stream writes a keepalive comment
	// (DefaultHeartbeat when zero), and WriteTimeout how long one write
	// to a stream may take (DefaultWriteTimeout when zero): a client that
	// vanished without a FIN, or stopped reading, is found by a write
	// that does not finish, and its stream released.
	Heartbeat, WriteTimeout time.Duration
	// Webhooks are the endpoints feed events are posted to, through
	// Outbox, which several hosts on one database share.
	Webhooks []Webhook
	Outbox   Outbox
	// RetrySchedule replaces Standard Webhooks' waits between attempts,
	// and WebhookPoll how often the outbox is read, for tests.
	RetrySchedule []time.Duration
	WebhookPoll   time.Duration
	// BodyTimeout bounds the time to read a request body, from when its
	// handler starts reading (a body that trickles in, or never ends,
	// gets 408); DefaultBodyTimeout when zero.
	BodyTimeout time.Duration
	Logger      *slog.Logger
	Now         func() time.Time
	// Version is meka's, for the ATIF trajectories export writes.
	Version string
	// LoginCodeTTL and LoginSessionTTL bound a login link and the browser
	// session it is exchanged for; web's defaults when zero.
	LoginCodeTTL, LoginSessionTTL time.Duration
	// Logins keeps browser sessions (their cookies' hashes) across a
	// restart; nil keeps them in memory only.
	Logins web.LoginStore
	// Usage adds up the tokens and cost the log records, by session (the
	// store's spend query, as meka stats reads it); nil leaves records
	// without usage.
	Usage func(ctx context.Context) (map[string]Usage, error)
}

// Usage is what a session's model calls consumed, as the log records it;
// Cost is in the prices' currency, zero when the model has none.
type Usage struct {
	Calls      int64   `json:"calls"`
	Input      int64   `json:"input_tokens"`
	CacheRead  int64   `json:"cache_read_tokens"`
	CacheWrite int64   `json:"cache_write_tokens"`
	Output     int64   `json:"output_tokens"`
	Cost       float64 `json:"cost"`
}

// Defaults of Options.
const (
	DefaultBodyTimeout   = 30 * time.Second
	DefaultPruneInterval = time.Hour
	DefaultHeartbeat     = 15 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
)

// Server serves the HTTP API. Construct it with New; Serve runs it.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux
	app  http.Handler // the browser app's assets
	// logins are the browser app's login codes and cookie sessions.
	logins *web.Logins

	mu       sync.Mutex              // guards sessions and idem
	sessions map[string]*attached    // sessions this server attached to
	idem     map[string]*idempotency // Idempotency-Key → stored response

	cache feedCache // the feed\'s newest events, for live streams

	subMu  sync.Mutex               // guards subs and subsOf
	subs   map[*subscriber]struct{} // live streams, for ephemeral frames
	subsOf map[string]int           // live streams by session, for its cap

	streams atomic.Int64 // event streams being served
}

// New returns a server for opts.
func New(opts Options) (*Server, error) {
	if opts.Host == nil || opts.Feed == nil {
		return nil, errors.New("httpapi: Host and Feed are required")
	}
	if len(opts.Token) < 16 {
		return nil, errors.New("httpapi: a token of at least 16 characters is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.BodyTimeout <= 0 {
		opts.BodyTimeout = DefaultBodyTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PruneInterval <= 0 {
		opts.PruneInterval = DefaultPruneInterval
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	s := &Server{opts: opts, log: opts.Logger, mux: http.NewServeMux(),
		sessions: make(map[string]*attached), idem: make(map[string]*idempotency), subs: make(map[*subscriber]struct{}), subsOf: make(map[string]int)}
	s.cache.feed = opts.Feed
	s.app = web.Handler()
	s.logins = web.NewLogins(web.LoginOptions{Now: opts.Now, CodeTTL: opts.LoginCodeTTL, SessionTTL: opts.LoginSessionTTL,
		Store: opts.Logins, Logger: opts.Logger})
	s.routes()
	return s, nil
}

// Opened attaches a top-level session the host opened, so that its turns
// reach the feed and its approvals this server even when no client opened
// it; a sub-agent's route through its parent's. It is the host's OnOpen
// for the one server that serves all its sessions.
func (s *Server) Opened(hs *host.Session) {
	if hs.Meta().ParentID == "" {
		s.attach(hs)
	}
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /v1/openapi.json", s.openapi)
	m.HandleFunc("POST /v1/login-links", s.createLoginLink)
	m.HandleFunc("POST /v1/login", s.login)
	m.HandleFunc("POST /v1/logout", s.logout)
	m.HandleFunc("GET /v1/runtime", func(w http.ResponseWriter, r *http.Request) {
		out := map[string]int64{"goroutines": int64(runtime.NumGoroutine()), "streams": s.streams.Load()}
		if fds, rss, ok := procStats(); ok {
			out["open_files"], out["rss_bytes"] = fds, rss
		}
		writeJSON(w, http.StatusOK, out)
	})
	m.HandleFunc("POST /v1/sessions", s.createSession)
	m.HandleFunc("GET /v1/sessions", s.listSessions)
	m.HandleFunc("GET /v1/sessions/{id}", s.getSession)
	m.HandleFunc("PATCH /v1/sessions/{id}", s.patchSession)
	m.HandleFunc("POST /v1/sessions/{id}/fork", s.forkSession)
	m.HandleFunc("POST /v1/sessions/{id}/close", s.closeSession)
	m.HandleFunc("POST /v1/sessions/{id}/rewind", s.rewindSession)
	m.HandleFunc("GET /v1/sessions/{id}/messages", s.messages)
	m.HandleFunc("GET /v1/sessions/{id}/history", s.history)
	m.HandleFunc("GET /v1/sessions/{id}/export", s.export)
	m.HandleFunc("POST /v1/sessions/{id}/turns", s.startTurn)
	m.HandleFunc("POST /v1/sessions/{id}/compact", s.compact)
	m.HandleFunc("GET /v1/sessions/{id}/turns/{tid}", s.getTurn)
	m.HandleFunc("POST /v1/sessions/{id}/turns/{tid}/cancel", s.cancelTurn)
	m.HandleFunc("POST /v1/sessions/{id}/inbox", s.inbox)
	m.HandleFunc("GET /v1/sessions/{id}/approvals", s.listApprovals)
	m.HandleFunc("GET /v1/sessions/{id}/hooks", s.listHooks)
	m.HandleFunc("POST /v1/sessions/{id}/approvals/{aid}", s.answerApproval)
	m.HandleFunc("GET /v1/sessions/{id}/elicitations", s.listElicitations)
	m.HandleFunc("POST /v1/sessions/{id}/elicitations/{eid}", s.answerElicitation)
	m.HandleFunc("GET /v1/sessions/{id}/events", s.sessionEvents)
	m.HandleFunc("GET /v1/events", s.allEvents)
	m.HandleFunc("GET /v1/tasks", s.listTasks)
	m.HandleFunc("POST /v1/sessions/{id}/tasks/{tid}/stop", s.stopTask)
	m.HandleFunc("GET /v1/approvals", s.allApprovals)
	m.HandleFunc("GET /v1/elicitations", s.allElicitations)
	m.HandleFunc("GET /v1/schedule", s.listSchedule)
	m.HandleFunc("GET /v1/sessions/{id}/schedule", s.sessionSchedule)
	m.HandleFunc("POST /v1/sessions/{id}/schedule", s.createJob)
	m.HandleFunc("DELETE /v1/schedule/{job}", s.deleteJob)
}

// ServeHTTP checks the request's origin, host and credentials, then
// serves it. The browser app's assets and the login exchange need none:
// the assets hold no data and the login's code is a credential.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	web.SetSecurityHeaders(w.Header())
	if o := r.Header.Get("Origin"); o != "" && o != selfOrigin(r) && !slices.Contains(s.opts.Origins, o) {
		writeProblem(w, problem{Status: http.StatusForbidden, Code: "origin-not-allowed", Title: "The request's Origin is not allowed"})
		return
	}
	if s.opts.Loopback && !loopbackHost(r.Host) {
		writeProblem(w, problem{Status: http.StatusForbidden, Code: "host-not-allowed", Title: "The Host header must name a loopback address"})
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/") {
		s.app.ServeHTTP(w, r)
		return
	}
	if r.URL.Path != "/v1/health" && r.URL.Path != "/v1/login" && !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="meka"`)
		writeProblem(w, problem{Status: http.StatusUnauthorized, Code: "unauthenticated", Title: "A valid bearer token is required",
			Detail: "Send Authorization: Bearer <token>; meka serve token prints it, meka serve url prints a login link for a browser. Tokens in the query string are refused."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	s.mux.ServeHTTP(w, r)
}

// maxBody bounds a request body.
const maxBody = 8 << 20

func (s *Server) authorized(r *http.Request) bool {
	if r.URL.Query().Has("token") || r.URL.Query().Has("access_token") {
		return false // a token in a URL lands in logs
	}
	h := r.Header.Get("Authorization")
	if tok, ok := strings.CutPrefix(h, "Bearer "); ok {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
	}
	return h == "" && s.cookieAuthorized(r)
}

// loopbackHost reports whether a Host header names localhost or a
// loopback address, with or without a port.
func loopbackHost(h string) bool {
	host := h
	if hh, _, err := net.SplitHostPort(h); err == nil {
		host = hh
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves on l until ctx ends, then shuts down: streams end, turns
// in flight are cancelled by the host's close.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	// Before the first request: a client that reconnects after a crash
	// finds the turn it waited on ended.
	s.finishInterrupted(ctx)
	s.prune(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.sweep(ctx, done)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.deliverWebhooks(ctx, done)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.pruneFeed(ctx, done)
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	close(done)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// sweep releases sessions idle past IdleTimeout.
func (s *Server) sweep(ctx context.Context, done <-chan struct{}) {
	if s.opts.IdleTimeout <= 0 || s.opts.SweepInterval <= 0 {
		return
	}
	every(ctx, done, s.opts.SweepInterval, func() {
		for _, id := range s.opts.Host.SweepIdle(ctx, s.opts.IdleTimeout) {
			s.detach(id)
			s.record(ctx, Entry{SessionID: id, Type: "session.released", Data: mustJSON(map[string]string{"reason": "idle"})})
		}
	})
}

// pruneFeed prunes the feed every PruneInterval (Serve did at start). Several hosts on one database may all prune: deleting
// what another deleted is a no-op.
func (s *Server) pruneFeed(ctx context.Context, done <-chan struct{}) {
	if s.opts.FeedRetention <= 0 {
		return
	}
	every(ctx, done, s.opts.PruneInterval, func() { s.prune(ctx) })
}

// every calls fn each interval until done closes or ctx ends.
func every(ctx context.Context, done <-chan struct{}, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// prune deletes feed events older than FeedRetention, if it is set.
func (s *Server) prune(ctx context.Context) {
	if s.opts.FeedRetention <= 0 {
		return
	}
	n, err := s.opts.Feed.Prune(ctx, s.opts.Now().Add(-s.opts.FeedRetention))
	if err != nil && ctx.Err() == nil {
		s.log.Warn("prune the feed", "err", err)
	} else if n > 0 {
		s.log.Debug("pruned the feed", "events", n)
	}
}

// NewToken returns a random token for the token file.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
