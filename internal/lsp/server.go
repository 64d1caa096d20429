package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"

	"meka.dev/meka/internal/sandbox"
)

// dropReason is why a server ended.
type dropReason int

const (
	dropIdle dropReason = iota
	dropHung
	dropCrash
)

func (d dropReason) String() string {
	return [...]string{"idle", "hung", "crashed"}[d]
}

// server is one running language server.
type server struct {
	m      *Manager
	key    key
	name   string
	cmd    *exec.Cmd
	conn   jsonrpc2.Conn
	tmp    string
	stderr *tail
	kill   context.CancelFunc // kills the process group
	// ready is closed once initialize was answered; initErr says how.
	ready   chan struct{}
	initErr error
	// dead is closed once the process has exited and the connection
	// ended; exitErr is how the process ended.
	dead    chan struct{}
	exitErr error

	mu sync.Mutex // guards docs, seq, changed, busy, idle, stopping, heard, working
	// heard counts what the server sent (requests and notifications),
	// working the work-done progress it has begun and not ended: signs
	// of life while it answers nothing else.
	heard   uint64
	working map[string]bool
	// docs are the open documents, by path.
	docs map[string]*document
	// seq counts changes sent and diagnostics published, to tell a
	// publication that follows a change from one that preceded it.
	seq uint64
	// changed is closed and replaced at every publication.
	changed chan struct{}
	// busy counts the Diagnose calls in progress, which the idle timer
	// waits for.
	busy int
	idle Timer
	// stopping is set once meka stops the server, so its exit is not a
	// crash.
	stopping bool
}

// document is one open document.
type document struct {
	id      string
	version int32
	text    string
	sent    uint64 // seq when the last change was sent
	// What the server last published: at which seq, for which version
	// (-1 when it did not say), and what.
	pubSeq     uint64
	pubVersion int32
	diags      []Diagnostic
}

// start launches the server of k, confined in mode, and sends initialize.
// It is called with m.mu held.
func (m *Manager) start(k key, argv []string, mode sandbox.Mode) (*server, error) {
	tmp, err := sandbox.MkShellTemp()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	var env []string
	if mode == sandbox.Unrestricted {
		env = sandbox.ScrubEnv(m.opts.Env, m.opts.ScrubNames)
	} else {
		env = sandbox.ConfinedEnv(m.opts.Env, m.opts.EnvPassthrough)
	}
	cache := m.opts.CacheDir
	if cache == "" {
		cache = filepath.Join(tmp, "cache")
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	env = append(env, "XDG_CACHE_HOME="+cache)
	life, kill := context.WithCancel(context.Background())
	spec := sandbox.Spec{
		Args: argv, Dir: k.root, Env: env, Mode: mode, TempDir: tmp,
		Network: m.opts.Network, Protected: m.opts.Protected, Masked: m.opts.Masked, Visible: m.opts.Visible,
		WaitDelay: time.Second,
	}
	if mode == sandbox.Workspace {
		spec.Writable = []string{cache}
	}
	cmd, err := sandbox.Command(life, spec)
	if err != nil {
		kill()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s := &server{m: m, key: k, name: filepath.Base(argv[0]), cmd: cmd, tmp: tmp, stderr: &tail{max: 8 << 10},
		kill: kill, ready: make(chan struct{}), dead: make(chan struct{}),
		docs: map[string]*document{}, changed: make(chan struct{})}
	cmd.Stderr = s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		kill()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if err := cmd.Start(); err != nil {
		kill()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(pipe{stdout, stdin}))
	s.conn.Go(life, s.handle)
	s.idle = m.opts.AfterFunc(m.opts.IdleTimeout, s.idleFired)
	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		s.exitErr = cmd.Wait()
		_ = sandbox.KillGroup(cmd)
		_ = s.conn.Close()
		os.RemoveAll(tmp)
		s.mu.Lock()
		stopping := s.stopping
		s.stopping = true
		if s.idle != nil {
			s.idle.Stop()
		}
		s.mu.Unlock()
		if !stopping {
			// Exited on its own: the notice is left for the caller
			// waiting (it sees dead), or else the next one.
			m.dropped(s, dropCrash, exitDetail(s.exitErr))
		}
		close(s.dead)
	}()
	go func() {
		defer m.wg.Done()
		s.initialize(life)
	}()
	return s, nil
}

// initialize sends initialize and initialized, then closes ready. A
// server that does not answer is dropped by the Diagnose waiting for it.
func (s *server) initialize(ctx context.Context) {
	defer close(s.ready)
	root := fileURI(s.key.root)
	params := initializeParams{
		ProcessID:        os.Getpid(),
		ClientInfo:       clientInfo{Name: "meka"},
		RootURI:          root,
		WorkspaceFolders: []workspaceFolder{{URI: root, Name: filepath.Base(s.key.root)}},
		Capabilities: clientCapabilities{
			Workspace:    workspaceCapabilities{Configuration: true, WorkspaceFolders: true},
			TextDocument: textDocumentCapabilities{PublishDiagnostics: publishDiagnosticsCapabilities{VersionSupport: true}},
			Window:       windowCapabilities{WorkDoneProgress: true},
		},
	}
	// A server gets longer to start than to answer an edit: a slow start
	// is reported as one, and only a server still silent after
	// startTimeout is dropped.
	ctx, cancel := context.WithTimeout(ctx, max(startTimeout, s.m.opts.Wait))
	defer cancel()
	var result json.RawMessage
	if _, err := s.conn.Call(ctx, methodInitialize, params, &result); err != nil {
		s.initErr = err
		if ctx.Err() != nil && s.hang() {
			s.m.leave(s, s.m.dropped(s, dropHung, ""))
			s.m.wg.Go(func() { s.stop(false) })
		}
		return
	}
	s.initErr = s.conn.Notify(ctx, methodInitialized, struct{}{})
}

// handle answers what the server asks of meka and records what it
// publishes. It runs on the connection's read goroutine and never blocks.
func (s *server) handle(_ context.Context, req *jsonrpc2.Request) (any, error) {
	s.mu.Lock()
	s.heard++
	s.mu.Unlock()
	switch req.Method() {
	case methodProgress:
		var p progressParams
		if err := json.Unmarshal(req.Params(), &p); err == nil {
			s.progress(fmt.Sprint(p.Token), p.Value.Kind)
		}
		return nil, nil
	case methodPublishDiagnostics:
		var p publishDiagnosticsParams
		if err := json.Unmarshal(req.Params(), &p); err == nil {
			s.publish(p)
		}
		return nil, nil
	case methodConfiguration:
		// No settings: each item's answer is null, the server's defaults.
		var p configurationParams
		_ = json.Unmarshal(req.Params(), &p)
		return make([]any, len(p.Items)), nil
	case methodWorkspaceFolders:
		return []workspaceFolder{{URI: fileURI(s.key.root), Name: filepath.Base(s.key.root)}}, nil
	case "client/registerCapability", "client/unregisterCapability", "window/workDoneProgress/create",
		"window/showMessageRequest", "workspace/diagnostic/refresh", "workspace/semanticTokens/refresh",
		"workspace/inlayHint/refresh", "workspace/codeLens/refresh":
		return nil, nil
	}
	if req.IsCall() {
		return nil, jsonrpc2.ErrMethodNotFound
	}
	return nil, nil // logs, progress, telemetry
}

// progress records work-done progress beginning and ending.
func (s *server) progress(token, kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case "begin":
		if s.working == nil {
			s.working = map[string]bool{}
		}
		if len(s.working) < 1000 { // a bound against a server that never ends any
			s.working[token] = true
		}
	case "end":
		delete(s.working, token)
	}
}

// stirring reports whether the server sent anything since heard was
// at, or has work in progress.
func (s *server) stirring(at uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard > at || len(s.working) > 0
}

// publish records a publication of diagnostics.
func (s *server) publish(p publishDiagnosticsParams) {
	path := uriPath(p.URI)
	var diags []Diagnostic
	for _, d := range p.Diagnostics {
		sev := Severity(d.Severity)
		if sev == 0 {
			sev = SeverityError // the specification leaves it to the client
		}
		if sev != SeverityError && sev != SeverityWarning {
			continue
		}
		diags = append(diags, Diagnostic{Line: d.Range.Start.Line + 1, Column: d.Range.Start.Character + 1,
			Severity: sev, Source: d.Source, Message: d.Message})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc := s.docs[path]
	if doc == nil {
		return // a file meka did not open: not asked for
	}
	s.seq++
	doc.pubSeq, doc.diags, doc.pubVersion = s.seq, diags, -1
	if p.Version != nil {
		doc.pubVersion = *p.Version
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// diagnose sends path's content and waits, within ctx, for the
// diagnostics the server publishes for it.
// The caller has acquired s; diagnose releases it.
func (s *server) diagnose(ctx context.Context, path, id, text string) Report {
	defer s.release()
	select {
	case <-s.ready:
	case <-s.dead:
		return s.lost()
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errWaited) {
			return Report{Note: fmt.Sprintf("%s is still starting; call diagnostics to ask again", s.name)}
		}
		return Report{}
	}
	if s.initErr != nil || s.sync(ctx, path, id, text) != nil {
		// A connection that failed is a server on its way out, or one
		// that no longer reads: wait for either.
		select {
		case <-s.dead:
			return s.lost()
		case <-ctx.Done():
			return s.timedOut(ctx, false)
		}
	}
	// A ping beside the wait, and whatever else the server sends, tell a
	// server that is busy from one that reads nothing any more.
	s.mu.Lock()
	heard := s.heard
	s.mu.Unlock()
	answered := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Go(func() {
		_, err := s.conn.Call(pctx, methodPing, nil, nil)
		var rpcErr *jsonrpc2.Error
		if err == nil || errors.As(err, &rpcErr) {
			close(answered)
		}
	})
	for {
		s.mu.Lock()
		doc := s.docs[path]
		fresh := doc != nil && doc.pubSeq > doc.sent && (doc.pubVersion < 0 || doc.pubVersion >= doc.version)
		var diags []Diagnostic
		if fresh {
			diags = slices.Clone(doc.diags)
		}
		changed := s.changed
		s.mu.Unlock()
		if fresh {
			return Report{Fresh: true, Diagnostics: diags}
		}
		select {
		case <-changed:
		case <-s.dead:
			return s.lost()
		case <-ctx.Done():
			select {
			case <-answered:
				return s.timedOut(ctx, true)
			default:
				return s.timedOut(ctx, s.stirring(heard))
			}
		}
	}
}

// sync opens path in the server, or sends its new content.
func (s *server) sync(ctx context.Context, path, id, text string) error {
	s.mu.Lock()
	doc := s.docs[path]
	if doc != nil && doc.text == text {
		s.mu.Unlock()
		return nil // the server has it; what it published stands
	}
	var evict []string
	if doc == nil {
		if len(s.docs) >= maxOpen {
			evict = append(evict, s.oldestLocked())
		}
		doc = &document{id: id, pubVersion: -1}
		s.docs[path] = doc
	}
	doc.version++
	doc.text = text
	s.seq++
	doc.sent = s.seq
	version, first := doc.version, doc.version == 1
	s.mu.Unlock()
	for _, p := range evict {
		_ = s.conn.Notify(ctx, methodDidClose, didCloseParams{TextDocument: textDocumentIdentifier{URI: fileURI(p)}})
	}
	uri := fileURI(path)
	if first {
		return s.conn.Notify(ctx, methodDidOpen, didOpenParams{TextDocument: textDocumentItem{URI: uri, LanguageID: id, Version: version, Text: text}})
	}
	return s.conn.Notify(ctx, methodDidChange, didChangeParams{
		TextDocument: versionedTextDocument{URI: uri, Version: version}, ContentChanges: []contentChange{{Text: text}}})
}

// oldestLocked forgets the document changed longest ago and returns its
// path.
func (s *server) oldestLocked() string {
	var oldest string
	var at uint64
	for p, d := range s.docs {
		if oldest == "" || d.sent < at {
			oldest, at = p, d.sent
		}
	}
	delete(s.docs, oldest)
	return oldest
}

// lost reports a server that exited while a caller waited for it.
func (s *server) lost() Report {
	notice := s.m.takeNotice(s)
	return Report{Note: s.name + " exited before it reported", Notice: notice}
}

// timedOut reports a wait that ended: by the caller (nothing to say), or
// at the deadline, where a server that answered the ping is slow and one
// that did not is dropped as hung.
func (s *server) timedOut(ctx context.Context, alive bool) Report {
	if !errors.Is(context.Cause(ctx), errWaited) {
		return Report{}
	}
	wait := s.m.opts.Wait
	if alive {
		return Report{Note: fmt.Sprintf("%s reported nothing for this file within %s; it may still be loading the workspace: call diagnostics to ask again", s.name, wait)}
	}
	if !s.hang() {
		select {
		case <-s.dead:
			return s.lost()
		default:
			return Report{Note: s.name + " is stopping"}
		}
	}
	notice := s.m.dropped(s, dropHung, "")
	s.m.wg.Go(func() { s.stop(false) })
	return Report{Note: fmt.Sprintf("%s did not answer within %s and was stopped; there are no diagnostics", s.name, wait), Notice: notice}
}

// hang marks s as stopping for not answering; false when it already was
// stopping.
func (s *server) hang() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.stopping = true
	return true
}

// acquire marks a Diagnose call on s, which the idle timer waits for;
// false when s is stopping.
func (s *server) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.busy++
	return true
}

// release ends what acquire began and restarts the idle timer.
func (s *server) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy--
	if s.idle != nil && !s.stopping {
		s.idle.Reset(s.m.opts.IdleTimeout)
	}
}

// idleFired stops a server nobody asked for during the idle timeout.
func (s *server) idleFired() {
	s.mu.Lock()
	if s.busy > 0 || s.stopping {
		s.mu.Unlock()
		return // a caller's touch restarts the timer
	}
	s.stopping = true
	s.mu.Unlock()
	s.m.dropped(s, dropIdle, "")
	s.stop(true)
}

// stop ends the server: politely (shutdown, exit) when graceful, then
// by killing its process group; it returns once the process is gone.
func (s *server) stop(graceful bool) {
	s.mu.Lock()
	s.stopping = true
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	if graceful {
		select {
		case <-s.ready:
			if s.initErr == nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				if _, err := s.conn.Call(ctx, methodShutdown, nil, nil); err == nil {
					_ = s.conn.Notify(ctx, methodExit, nil)
					select {
					case <-s.dead:
					case <-ctx.Done():
					}
				}
				cancel()
			}
		default:
		}
	}
	s.kill()
	<-s.dead
}

// takeNotice returns the notice left for s's key.
func (m *Manager) takeNotice(s *server) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.notices[s.key]
	delete(m.notices, s.key)
	return n
}

// exitDetail says how a process ended.
func exitDetail(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	return err.Error()
}

// pipe is a server's standard output and input as one stream.
type pipe struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipe) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p pipe) Close() error {
	return errors.Join(p.w.Close(), p.ReadCloser.Close())
}

// tail keeps the last bytes written to it: a server's standard error.
type tail struct {
	max int
	mu  sync.Mutex // guards buf
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = slices.Clone(t.buf[len(t.buf)-t.max:])
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
