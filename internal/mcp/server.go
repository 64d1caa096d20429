package mcp

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/sandbox"
)

// stderrTail is how much of a stdio server's standard error is kept.
const stderrTail = 8 << 10

// server is one configured server and its connection.
type server struct {
	m      *Manager
	cfg    Server
	ready  chan struct{} // closed once the first start settled
	stderr *tail

	mu    sync.Mutex // guards state, err, reason, conn, tools, prompts, listed, calls, nextCall, moved, leftOut
	state State
	// moved is closed and replaced at every change of state, for calls
	// waiting out a reconnection.
	moved chan struct{}
	err   error
	// reason is why the server last failed to start, as why says it.
	reason  string
	conn    *conn
	tools   []*remoteTool
	prompts []Prompt
	// listed is set once the server listed its tools in this process:
	// from then on its list, not a session's record, says what it offers.
	listed bool
	// calls are the calls in flight, by start order; an elicitation goes
	// to the newest one's session.
	calls    map[uint64]*inflight
	nextCall uint64
	// leftOut are the listed tools not offered, by the server's name, with
	// why, so that each is told once.
	leftOut map[string]string
}

// conn is one live connection.
type conn struct {
	cs     *sdk.ClientSession
	cmd    *exec.Cmd // stdio only
	cancel context.CancelFunc
	done   chan struct{} // closed when the connection ended
}

// inflight is a call on its way, for routing the server's requests.
type inflight struct {
	ctx     context.Context
	binding *Binding
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Name: s.cfg.Name, State: s.state, Tools: len(s.tools), Prompts: len(s.prompts),
		Required: s.cfg.Required, Err: s.err, Reason: s.reason, Stderr: s.stderr.String()}
}

func (s *server) toolList() []*remoteTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// listing returns the server's tools and whether it listed them in this
// process.
func (s *server) listing() ([]*remoteTool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, s.listed
}

func (s *server) promptList() []Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prompts
}

// session returns the live connection's session, nil when not connected.
func (s *server) session() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || s.state != StateConnected {
		return nil
	}
	return s.conn.cs
}

// await returns the live session, waiting while the server reconnects
// after a drop (at most its startup_timeout); nil when it is not
// connected and not on its way back.
func (s *server) await(ctx context.Context) *sdk.ClientSession {
	if cs := s.session(); cs != nil {
		return cs
	}
	timer := time.NewTimer(s.cfg.StartupTimeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.conn != nil && s.state == StateConnected {
			cs := s.conn.cs
			s.mu.Unlock()
			return cs
		}
		// Starting, or connected with the connection just lost (the
		// loop is about to say so): wait.
		if s.state != StateStarting && s.state != StateConnected {
			s.mu.Unlock()
			return nil
		}
		if s.moved == nil {
			s.moved = make(chan struct{})
		}
		moved := s.moved
		s.mu.Unlock()
		select {
		case <-moved:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// run connects, waits for the connection to end, and connects again
// with backoff, until ctx ends.
func (s *server) run(ctx context.Context) {
	backoff := s.m.opts.MinBackoff
	first := true
	for {
		c, err := s.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				s.settle(first)
				return
			}
			// The error and stderr can carry a command line: -v shows
			// them whole; the notice says why in words that cannot.
			s.m.opts.Logger.Info("mcp: server did not start", "server", s.cfg.Name, "err", err, "stderr", s.stderr.String())
			s.setState(StateFailed, err, "MCP server "+s.cfg.Name+" failed to start: "+s.why(err))
		} else {
			backoff = s.m.opts.MinBackoff
		}
		s.settle(first)
		first = false
		if c != nil {
			select {
			case <-c.done:
				s.m.opts.Logger.Info("mcp: server disconnected", "server", s.cfg.Name, "stderr", s.stderr.String())
			case <-ctx.Done():
			}
			s.disconnect(c)
			if ctx.Err() != nil {
				return
			}
			s.setState(StateStarting, nil, "MCP server "+s.cfg.Name+" disconnected; reconnecting")
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, s.m.opts.MaxBackoff)
	}
}

func (s *server) settle(first bool) {
	if first {
		close(s.ready)
	}
}

// setState records a state and tells Notify when it changed.
func (s *server) setState(st State, err error, text string) {
	s.mu.Lock()
	changed := s.moveLocked(st, err)
	s.mu.Unlock()
	if changed {
		sev := SeverityWarning
		if st == StateConnected {
			sev = SeverityInfo
		}
		s.m.notify(s.cfg.Name, sev, text)
	}
}

// moveLocked records a state, wakes the calls waiting for one and
// reports whether it changed; s.mu is held.
func (s *server) moveLocked(st State, err error) bool {
	changed := s.state != st
	s.state, s.err, s.reason = st, err, ""
	if err != nil {
		s.reason = s.why(err)
	}
	if s.moved != nil {
		close(s.moved)
		s.moved = nil
	}
	return changed
}

// connect starts the server (stdio) or reaches it (HTTP), initializes
// and lists its tools and prompts, within startup_timeout.
func (s *server) connect(ctx context.Context) (*conn, error) {
	start, cancelStart := context.WithTimeout(ctx, s.cfg.StartupTimeout)
	defer cancelStart()
	life, cancel := context.WithCancel(ctx)
	c := &conn{cancel: cancel, done: make(chan struct{})}
	transport, err := s.transport(life, c)
	if err != nil {
		cancel()
		return nil, err
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "meka", Version: s.m.opts.Version}, &sdk.ClientOptions{
		ElicitationHandler: s.elicit,
		Capabilities: &sdk.ClientCapabilities{
			Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}},
		},
		ToolListChangedHandler:   func(context.Context, *sdk.ToolListChangedRequest) { s.relist(ctx, c) },
		PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) { s.relist(ctx, c) },
	})
	cs, err := client.Connect(start, transport, nil)
	if err != nil {
		s.kill(c)
		if start.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("connect: %w within %s", errStartTimeout, s.cfg.StartupTimeout)
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	c.cs = cs
	tools, prompts, err := s.list(start, cs)
	if err != nil {
		_ = cs.Close()
		s.kill(c)
		return nil, err
	}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		_ = cs.Wait()
		close(c.done)
	}()
	// The tools, the connection and the state are published together, so
	// nothing can offer or call a tool of a server /mcp still shows as
	// starting; the tool set moves only after that.
	s.mu.Lock()
	s.conn, s.tools, s.prompts, s.listed = c, tools, prompts, true
	changed := s.moveLocked(StateConnected, nil)
	s.mu.Unlock()
	if changed {
		s.m.notify(s.cfg.Name, SeverityInfo, fmt.Sprintf("MCP server %s connected", s.cfg.Name))
	}
	s.m.rebuild()
	return c, nil
}

// transport returns how to reach the server; a stdio server's process
// lives as long as life.
func (s *server) transport(life context.Context, c *conn) (sdk.Transport, error) {
	if s.cfg.URL != "" {
		headers := make(http.Header, len(s.cfg.Headers))
		for k, v := range s.cfg.Headers {
			headers.Set(k, os.Expand(v, s.m.opts.Getenv))
		}
		return &sdk.StreamableClientTransport{
			Endpoint:   os.Expand(s.cfg.URL, s.m.opts.Getenv),
			HTTPClient: &http.Client{Transport: headerTransport{headers: headers}},
		}, nil
	}
	env := slices.Clone(s.m.opts.Env)
	for k, v := range s.cfg.Env {
		env = append(env, k+"="+v)
	}
	cmd, err := sandbox.Command(life, sandbox.Spec{
		Args: append([]string{s.cfg.Command}, s.cfg.Args...), Env: env, Mode: sandbox.Unrestricted,
	})
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	cmd.Stderr = s.stderr
	c.cmd = cmd
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil
}

// list fetches the server's tools and prompts.
func (s *server) list(ctx context.Context, cs *sdk.ClientSession) ([]*remoteTool, []Prompt, error) {
	caps := cs.InitializeResult().Capabilities
	var tools []*remoteTool
	if caps == nil || caps.Tools != nil {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return nil, nil, fmt.Errorf("list tools: %w", err)
			}
			if !s.offers(t.Name) {
				continue
			}
			rt, err := newRemoteTool(s, t)
			if err != nil {
				// The server's other tools are offered: one tool the
				// providers cannot take must not fail every request.
				s.leaveOut(t.Name, err)
				continue
			}
			tools = append(tools, rt)
		}
	}
	var prompts []Prompt
	if caps != nil && caps.Prompts != nil {
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return nil, nil, fmt.Errorf("list prompts: %w", err)
			}
			prompts = append(prompts, newPrompt(s, p))
		}
	}
	return tools, prompts, nil
}

// leaveOut tells once that a listed tool is not offered, and why, naming
// the server and the tool; a listing that says the same again is quiet.
func (s *server) leaveOut(name string, err error) {
	s.mu.Lock()
	if s.leftOut == nil {
		s.leftOut = make(map[string]string)
	}
	told := s.leftOut[name] == err.Error()
	s.leftOut[name] = err.Error()
	s.mu.Unlock()
	if told {
		return
	}
	s.m.opts.Logger.Info("mcp: tool left out", "server", s.cfg.Name, "tool", name, "err", err)
	s.m.notify(s.cfg.Name, SeverityWarning, fmt.Sprintf("MCP tool %s of server %s is left out: %v; the server's other tools are offered", name, s.cfg.Name, err))
}

// offers applies enabled_tools and disabled_tools.
func (s *server) offers(name string) bool {
	if len(s.cfg.EnabledTools) > 0 && !slices.Contains(s.cfg.EnabledTools, name) {
		return false
	}
	return !slices.Contains(s.cfg.DisabledTools, name)
}

// relist takes the server's lists again after it said they changed. It
// runs on a goroutine of its own: the notification's handler must return
// before the answer to a new request can be read.
func (s *server) relist(ctx context.Context, c *conn) {
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		lctx, cancel := context.WithTimeout(ctx, s.cfg.StartupTimeout)
		defer cancel()
		s.mu.Lock()
		current := s.conn == c
		s.mu.Unlock()
		if !current {
			return // still connecting, whose own listing is under way
		}
		tools, prompts, err := s.list(lctx, c.cs)
		if err != nil {
			s.m.opts.Logger.Warn("mcp: list again", "server", s.cfg.Name, "err", err)
			return
		}
		s.mu.Lock()
		if s.conn != c {
			s.mu.Unlock()
			return
		}
		s.tools, s.prompts = tools, prompts
		s.mu.Unlock()
		s.m.rebuild()
	}()
}

// lost ends the connection whose session cs failed a call, so that the
// server's loop connects again and calls meanwhile wait for it.
func (s *server) lost(cs *sdk.ClientSession) {
	s.mu.Lock()
	mine := s.conn != nil && s.conn.cs == cs
	if mine {
		s.conn = nil
	}
	s.mu.Unlock()
	_ = cs.Close()
	if mine {
		s.setState(StateStarting, nil, "MCP server "+s.cfg.Name+" disconnected; reconnecting")
	}
}

// disconnect closes a connection and kills what is left of its process.
// The server's tools stay listed, so that a connection that comes back
// does not change what the model is offered; calls meanwhile fail.
func (s *server) disconnect(c *conn) {
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
	}
	s.mu.Unlock()
	_ = c.cs.Close()
	s.kill(c)
}

// kill ends a stdio server's whole process group.
func (s *server) kill(c *conn) {
	c.cancel()
	if c.cmd != nil {
		_ = sandbox.KillGroup(c.cmd)
	}
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct{ headers http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		r.Header[k] = vs
	}
	return http.DefaultTransport.RoundTrip(r)
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex // guards buf
	buf []byte
	max int
}

func newTail(n int) *tail { return &tail{max: n} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
