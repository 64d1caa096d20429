package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/tools/shelltool"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// fakeTool is a tool whose behaviour a test supplies.
type fakeTool struct {
	spec  tool.Spec
	title func(json.RawMessage) string
	run   func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f *fakeTool) Spec() tool.Spec { return f.spec }
func (f *fakeTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	return f.run(ctx, c)
}
func (f *fakeTool) Title(args json.RawMessage) string {
	if f.title != nil {
		return f.title(args)
	}
	return ""
}

// gateTool blocks until released or canceled, telling the test it runs.
func gateTool(name string, level permission.Level, started chan<- struct{}, release <-chan struct{}) *fakeTool {
	return &fakeTool{
		spec: tool.Spec{Name: name, Description: name, Schema: json.RawMessage(`{"type":"object"}`), Level: level, Kind: tool.KindExecute},
		run: func(ctx context.Context, c tool.Call) (tool.Result, error) {
			if started != nil {
				started <- struct{}{}
			}
			select {
			case <-release:
				return tool.Text("released"), nil
			case <-ctx.Done():
				return tool.Result{IsError: true}, ctx.Err()
			}
		},
	}
}

// harness is a meka acp server on pipes and a client on the other ends,
// recording every session/update the client receives.
type harness struct {
	t      testing.TB
	client *jsonrpc.Conn
	host   *host.Host
	db     *sqlite.DB
	// letOpen lets a held host open (harnessOptions.held); openAsked is
	// closed once the server starts opening it, and wireAtOpen is what it
	// had written then.
	letOpen    func()
	openAsked  chan struct{}
	wireAtOpen []string
	srv        *server
	prov       *script.Provider
	cwd        string
	rawW       io.Writer // the server's input, for lines no client would send
	// countOnly keeps updates undecoded, so a benchmark measures the
	// server and not the test's client.
	countOnly bool
	cancel    context.CancelFunc
	done      chan error

	mu      sync.Mutex    // guards the fields below
	wire    []string      // every message the server wrote, in order
	wrote   chan struct{} // closed at the next message the server writes
	updates []SessionNotification
	asked   []RequestPermissionRequest
	answer  func(RequestPermissionRequest) RequestPermissionResponse
	buffers map[string]string // the editor's buffers, by path
	served  func(path string) bool
	writes  []WriteTextFileRequest
	reads   []ReadTextFileRequest
	// readErr, when set, answers every fs/read_text_file.
	readErr *jsonrpc.Error
}

type harnessOptions struct {
	rounds    string
	tools     []tool.Tool
	fileTools bool
	perms     host.Permissions
	opts      Options
	init      *InitializeRequest
	window    int
	maxBytes  int            // the profile's max_request_bytes
	provider  model.Provider // instead of a script of rounds
	shell     bool           // add shell_execute
	// home and workspaceHome are host.Options.Home and WorkspaceHome.
	home          string
	workspaceHome bool
	// checkpoints, when set, is where the host keeps them.
	checkpoints string
	// build, when set, runs as each session's engine is built; its error
	// fails the build.
	build func() error
	// held serves the host as meka acp does, opened once initialize is
	// answered (Options.Open, with the host's Admission), except that the
	// opening waits for letOpen; openErr, when set, is then its failure.
	held    bool
	openErr error
	// projects, when set, are the host's projects.
	projects []string
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if o.rounds == "" {
		o.rounds = "[]"
	}
	sc, err := script.Parse([]byte(`{"rounds":` + o.rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, db: db, prov: script.New(sc), buffers: map[string]string{}, done: make(chan error, 1), letOpen: func() {}}
	var prov model.Provider = h.prov
	if o.provider != nil {
		prov = o.provider
	}
	cwd, err := host.Canonical(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h.cwd = cwd
	if o.perms.Default == 0 && len(o.perms.Enabled) == 0 {
		o.perms = host.Permissions{Default: permission.Workspace}
	}
	hst, err := host.New(host.Options{
		Store:  db.Sessions(),
		Holder: session.Holder{Token: "acp-test"},
		Profiles: func(name string) (host.Profile, error) {
			switch name {
			case "", "test":
				return host.Profile{Name: "test", Provider: prov, ContextWindow: o.window, MaxRequestBytes: o.maxBytes, Vision: true}, nil
			case "other":
				return host.Profile{Name: "other", Provider: prov, ContextWindow: o.window}, nil
			}
			return host.Profile{}, errors.New("no such profile")
		},
		Tools: func(env host.Env) ([]tool.Tool, error) {
			if o.build != nil {
				if err := o.build(); err != nil {
					return nil, err
				}
			}
			ts := append([]tool.Tool(nil), o.tools...)
			if o.shell {
				ts = append(ts, shelltool.New(shelltool.Options{Tasks: env.TaskRegistry, Env: os.Environ()}))
			}
			if o.fileTools {
				ts = append(ts, fstool.New(fstool.Options{FS: env.Files})...)
			}
			return ts, nil
		},
		Permissions:   o.perms,
		DataDir:       t.TempDir(),
		Home:          o.home,
		WorkspaceHome: o.workspaceHome,
		Checkpoints:   checkpointsAt(o.checkpoints),
		Projects:      projectList(o.projects),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.host = hst

	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	opts := o.opts
	if o.held {
		opening := make(chan struct{})
		h.letOpen = sync.OnceFunc(func() { close(opening) })
		h.openAsked = make(chan struct{})
		opts.Open = func(context.Context) (*host.Host, error) {
			h.wireAtOpen = h.wireKinds()
			close(h.openAsked)
			<-opening
			if o.openErr != nil {
				return nil, o.openErr
			}
			return hst, nil
		}
		adm := hst.Admission()
		opts.Admission = &adm
	} else {
		opts.Host = hst
	}
	if opts.Profiles == nil {
		opts.Profiles = []string{"test", "other"}
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.srv = newServer(opts)
	h.srv.conn = jsonrpc.NewConn(sr, recorder{h, sw}, h.srv, h.srv.connOptions())
	h.srv.base = ctx
	h.srv.openServe = h.srv.opener(ctx, cancel)
	go func() {
		// As Serve ends.
		err := h.srv.conn.Serve(ctx)
		h.srv.awaitBuilds()
		h.srv.opening.Do(func() { close(h.srv.ready) })
		<-h.srv.ready
		if h.srv.host != nil {
			h.srv.closeAll(context.Background())
		}
		sw.Close()
		h.done <- err
	}()
	h.client = jsonrpc.NewConn(cr, cw, h, jsonrpc.Options{})
	h.rawW = cw
	go func() { _ = h.client.Serve(ctx) }()
	t.Cleanup(func() {
		h.letOpen()
		cw.Close()
		<-h.done
		cancel()
	})
	init := o.init
	if init == nil {
		init = &InitializeRequest{ProtocolVersion: 1, ClientInfo: &Implementation{Name: "harness", Version: "1"},
			ClientCapabilities: ClientCapabilities{Session: &ClientSessionCapabilities{Notices: &Empty{}, Compaction: &Empty{},
				ConfigOptions: &SessionConfigOptionsCapabilities{Boolean: &Empty{}}}}}
	}
	var resp InitializeResponse
	h.call("initialize", init, &resp)
	return h
}

// Handle serves the agent's requests to the client.
func (h *harness) Handle(ctx context.Context, req *jsonrpc.Request) (any, error) {
	switch req.Method {
	case "session/request_permission":
		var p RequestPermissionRequest
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		h.mu.Lock()
		h.asked = append(h.asked, p)
		answer := h.answer
		h.mu.Unlock()
		if answer == nil {
			<-ctx.Done()
			return RequestPermissionResponse{Outcome: PermissionOutcome{Outcome: "cancelled"}}, nil
		}
		return answer(p), nil
	case "fs/read_text_file":
		var p ReadTextFileRequest
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reads = append(h.reads, p)
		if h.readErr != nil {
			return nil, h.readErr
		}
		if h.served != nil && !h.served(p.Path) {
			return nil, jsonrpc.NewError(jsonrpc.ResourceNotFound, "Resource not found", map[string]string{"uri": p.Path})
		}
		s, ok := h.buffers[p.Path]
		if !ok {
			b, err := os.ReadFile(p.Path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, jsonrpc.NewError(jsonrpc.ResourceNotFound, "Resource not found", map[string]string{"uri": p.Path})
			}
			if err != nil {
				return nil, err
			}
			s = string(b)
		}
		return ReadTextFileResponse{Content: lineRange(s, p.Line, p.Limit)}, nil
	case "fs/write_text_file":
		var p WriteTextFileRequest
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, err
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.writes = append(h.writes, p)
		h.buffers[p.Path] = p.Content
		return struct{}{}, nil
	}
	return nil, jsonrpc.NewError(jsonrpc.MethodNotFound, "Method not found", nil)
}

func (h *harness) HandleNotification(ctx context.Context, n *jsonrpc.Notification) {
	if n.Method != "session/update" {
		return
	}
	if h.countOnly {
		h.mu.Lock()
		h.updates = append(h.updates, SessionNotification{})
		h.mu.Unlock()
		return
	}
	var sn SessionNotification
	if err := json.Unmarshal(n.Params, &sn); err != nil {
		h.t.Errorf("decode session/update: %v\n%s", err, n.Params)
		return
	}
	h.mu.Lock()
	h.updates = append(h.updates, sn)
	h.mu.Unlock()
}

// lineRange is what an editor serves of text for line and limit.
func lineRange(text string, line, limit *int) string {
	if line == nil && limit == nil {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	from := 0
	if line != nil {
		from = min(max(*line-1, 0), len(lines))
	}
	to := len(lines)
	if limit != nil {
		to = min(from+*limit, to)
	}
	return strings.Join(lines[from:to], "")
}

// call makes a request that must succeed.
func (h *harness) call(method string, params, result any) {
	h.t.Helper()
	if err := h.client.Call(h.t.Context(), method, params, result); err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
}

// callErr makes a request that must fail, returning its error.
func (h *harness) callErr(method string, params any) *jsonrpc.Error {
	h.t.Helper()
	err := h.client.Call(h.t.Context(), method, params, nil)
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		h.t.Fatalf("%s: want a JSON-RPC error, got %v", method, err)
	}
	return e
}

func (h *harness) newSession() string {
	h.t.Helper()
	var resp NewSessionResponse
	h.call("session/new", NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}, &resp)
	h.srv.awaitBuilds()
	return resp.SessionID
}

func (h *harness) prompt(id string, text string) PromptResponse {
	h.t.Helper()
	var resp PromptResponse
	h.call("session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock(text)}}, &resp)
	return resp
}

// take returns the updates received so far and forgets them.
func (h *harness) take() []SessionNotification {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.updates
	h.updates = nil
	return u
}

// tags returns the updates' tags.
func tags(ns []SessionNotification) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Update.updateTag()
	}
	return out
}

// recorder keeps each message the server writes (one Write each).
type recorder struct {
	h *harness
	w io.Writer
}

func (r recorder) Write(p []byte) (int, error) {
	r.h.mu.Lock()
	r.h.wire = append(r.h.wire, string(p))
	if r.h.wrote != nil {
		close(r.h.wrote)
		r.h.wrote = nil
	}
	r.h.mu.Unlock()
	return r.w.Write(p)
}

// wireKinds summarizes the messages written so far: "response" or the
// session/update tag or the method.
func (h *harness) wireKinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, line := range h.wire {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal([]byte(line), &m)
		switch {
		case m.Method == "session/update":
			var sn SessionNotification
			_ = json.Unmarshal(m.Params, &sn)
			out = append(out, sn.Update.updateTag())
		case m.Method != "":
			out = append(out, m.Method)
		default:
			out = append(out, "response")
		}
	}
	return out
}

func (h *harness) clearWire() {
	h.mu.Lock()
	h.wire = nil
	h.mu.Unlock()
}

// sync waits until what the server sent after its last response (its
// AfterResponse updates) has arrived: the next response waits for them.
func (h *harness) sync() {
	h.t.Helper()
	h.srv.awaitBuilds() // a new session's announcements follow its build
	h.call("session/list", ListSessionsRequest{}, nil)
}

// awaitWire returns the first message the server wrote from index from
// on that match accepts, waiting for it (bounded: a message that never
// comes fails the test instead of hanging it).
func (h *harness) awaitWire(from int, match func(string) bool) string {
	h.t.Helper()
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	for {
		h.mu.Lock()
		for _, l := range h.wire[from:] {
			if match(l) {
				h.mu.Unlock()
				return l
			}
		}
		from = len(h.wire)
		if h.wrote == nil {
			h.wrote = make(chan struct{})
		}
		wrote := h.wrote
		h.mu.Unlock()
		select {
		case <-wrote:
		case <-bound.C:
			h.t.Fatalf("no message the test waits for came within a minute")
		}
	}
}

// raw writes lines straight to the server and returns the next response
// line it writes.
func (h *harness) raw(lines string) string {
	h.t.Helper()
	h.mu.Lock()
	before := len(h.wire)
	h.mu.Unlock()
	if _, err := io.WriteString(h.rawW, lines); err != nil {
		h.t.Fatal(err)
	}
	for {
		h.sync()
		h.mu.Lock()
		for _, l := range h.wire[before:] {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.Method == "" && len(m.ID) > 0 && !strings.Contains(string(m.Result), `"sessions"`) {
				h.mu.Unlock()
				return l
			}
		}
		h.mu.Unlock()
	}
}

func projectList(names []string) func(context.Context) ([]string, error) {
	if names == nil {
		return nil
	}
	return func(context.Context) ([]string, error) { return names, nil }
}

func checkpointsAt(dir string) *host.CheckpointOptions {
	if dir == "" {
		return nil
	}
	return &host.CheckpointOptions{Dir: dir}
}
