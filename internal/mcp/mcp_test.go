package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/mcp/mcptest"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest-")
	if err != nil {
		panic(err)
	}
	serverBin = filepath.Join(dir, "mcptestserver")
	if out, err := exec.Command("go", "build", "-o", serverBin, "meka.dev/meka/internal/mcp/mcptest/mcptestserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcptestserver: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// notices collects what a manager tells, for waiting on state changes.
type notices struct {
	mu   sync.Mutex
	all  []string
	wake chan struct{}
}

func newNotices() *notices { return &notices{wake: make(chan struct{}, 1)} }

func (n *notices) notify(server string, _ mcp.Severity, text string) {
	n.mu.Lock()
	n.all = append(n.all, server+": "+text)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// waitFor waits until a notice containing s has been told, and returns
// how many notices there were then.
func (n *notices) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		n.mu.Lock()
		for _, x := range n.all {
			if strings.Contains(x, s) {
				n.mu.Unlock()
				return
			}
		}
		n.mu.Unlock()
		select {
		case <-n.wake:
		case <-timeout:
			t.Fatalf("no notice %q; have %q", s, n.all)
		}
	}
}

func (n *notices) reset() {
	n.mu.Lock()
	n.all = nil
	n.mu.Unlock()
}

func stdio(name string) mcp.Server {
	return mcp.Server{Name: name, Command: serverBin, StartupTimeout: 20 * time.Second, ToolTimeout: 20 * time.Second}
}

func start(t *testing.T, o mcp.Options) (*mcp.Manager, *notices) {
	t.Helper()
	n := newNotices()
	o.Notify = n.notify
	o.Env = append(o.Env, "PATH="+os.Getenv("PATH"))
	if o.MinBackoff == 0 {
		o.MinBackoff = 10 * time.Millisecond
	}
	m := mcp.New(o)
	m.Start(t.Context())
	t.Cleanup(func() { _ = m.Close() })
	return m, n
}

func registry(t *testing.T, m *mcp.Manager, b *mcp.Binding) *tool.Registry {
	t.Helper()
	r := tool.NewRegistry()
	r.AddSource(m.Source(b), func(name string, err error) { t.Logf("skipped %s: %v", name, err) })
	return r
}

func call(t *testing.T, r *tool.Registry, name, args string) (tool.Result, error) {
	t.Helper()
	tl, ok := r.Get(name)
	if !ok {
		t.Fatalf("no tool %s; have %v", name, r.Names())
	}
	if err := r.Validate(name, json.RawMessage(args)); err != nil {
		t.Fatalf("validate %s: %v", name, err)
	}
	return tl.Run(t.Context(), tool.Call{ID: "c1", Name: name, Arguments: json.RawMessage(args)})
}

func text(r tool.Result) string {
	var b strings.Builder
	for _, p := range r.Content {
		if x, ok := p.(model.Text); ok {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

func TestStdioToolsAndResults(t *testing.T) {
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{stdio("t")}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := m.Status()
	if len(st) != 1 || st[0].State != mcp.StateConnected || st[0].Tools == 0 || st[0].Prompts != 1 {
		t.Fatalf("status = %+v", st)
	}
	scratch := t.TempDir()
	vision := true
	stamp := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
	r := registry(t, m, &mcp.Binding{ScratchDir: scratch, Now: func() time.Time { return stamp }, Vision: func() bool { return vision }})

	res, err := call(t, r, "mcp__t__echo", `{"text":"hi"}`)
	if err != nil || res.IsError || text(res) != "echo: hi" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	res, err = call(t, r, "mcp__t__fail", `{}`)
	if err != nil || !res.IsError || text(res) != "the widget is broken" {
		t.Fatalf("fail = %+v, %v", res, err)
	}
	res, err = call(t, r, "mcp__t__picture", `{}`)
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("picture = %+v, %v", res, err)
	}
	if img, ok := res.Content[0].(model.Image); !ok || img.MediaType != "image/png" {
		t.Fatalf("picture part = %#v", res.Content[0])
	}
	vision = false
	res, _ = call(t, r, "mcp__t__picture", `{}`)
	if !strings.Contains(text(res), "does not read images") {
		t.Fatalf("picture without vision = %q", text(res))
	}
	res, _ = call(t, r, "mcp__t__structured", `{}`)
	for _, want := range []string{`<resource_link name="notes" uri="file:///notes.txt"></resource_link>`,
		`<resource uri="mem://a" mime="text/plain">alpha</resource>`, `{"chats":["x"]}`} {
		if !strings.Contains(text(res), want) {
			t.Errorf("structured result %q lacks %q", text(res), want)
		}
	}
	res, _ = call(t, r, "mcp__t__huge", `{"n":200000}`)
	out := text(res)
	if len(out) > 10<<10 || !strings.Contains(out, "Output cut at") {
		t.Fatalf("huge result not cut: %d bytes", len(out))
	}
	// The file is named by the binding's clock, not the machine's.
	files, _ := filepath.Glob(filepath.Join(scratch, "mcp__t__huge-20310203T040506-*"))
	if len(files) != 1 {
		t.Fatalf("scratch files = %v", files)
	}
	if fi, _ := os.Stat(files[0]); fi.Size() != 200001 {
		t.Fatalf("scratch file has %d bytes", fi.Size())
	}
	// Arguments that are not an object, which the registry's validation
	// would refuse, are refused by the tool itself too, as a failed result
	// naming the problem rather than an error ending the turn.
	e, _ := r.Get("mcp__t__echo")
	res, err = e.Run(t.Context(), tool.Call{ID: "c2", Name: "mcp__t__echo", Arguments: json.RawMessage(`["hi"]`)})
	if err != nil || !res.IsError || !strings.Contains(text(res), "mcp__t__echo was not run: the arguments are not a JSON object") {
		t.Fatalf("echo with an array = %+v, %v", res, err)
	}
	// A schema the validator cannot express is passed through; the
	// server validates.
	tl, _ := r.Get("mcp__t__refs")
	if !strings.Contains(string(tl.Spec().Schema), "$defs") {
		t.Fatalf("refs schema = %s", tl.Spec().Schema)
	}
	res, err = call(t, r, "mcp__t__refs", `{"n":3}`)
	if err != nil || text(res) != `refs {"n":3}` {
		t.Fatalf("refs = %q, %v", text(res), err)
	}
	if got := tool.Title(tl, json.RawMessage(`{}`)); got != "mcp__t__refs" {
		t.Errorf("title = %q", got)
	}
	w, _ := r.Get("mcp__t__write")
	if got := tool.Title(w, json.RawMessage(`{"path":"a/b.txt"}`)); got != "mcp__t__write a/b.txt" {
		t.Errorf("title = %q", got)
	}
	// Prompts.
	if ps := m.Prompts(); len(ps) != 1 || ps[0].Name != "mcp__t__greet" {
		t.Fatalf("prompts = %+v", ps)
	}
	got, err := m.GetPrompt(t.Context(), "mcp__t__greet", "Ada")
	if err != nil || got != "Say hello to Ada." {
		t.Fatalf("prompt = %q, %v", got, err)
	}
}

func TestCollisionsRefused(t *testing.T) {
	m, n := start(t, mcp.Options{Servers: []mcp.Server{stdio("t")}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	n.waitFor(t, "t: MCP tool mcp__t__a_b (from t, already taken by t) is not offered")
	r := registry(t, m, nil)
	res, err := call(t, r, "mcp__t__a_b", `{}`)
	if err != nil || text(res) != "dotted" {
		t.Fatalf("a_b = %q, %v", text(res), err)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my server", "get.thing/now", "mcp__my_server__get_thing_now"},
		{"s", strings.Repeat("x", 80), ""},
	} {
		got := mcp.ToolName(c.server, c.tool)
		if len(got) > mcp.MaxNameLen {
			t.Errorf("ToolName(%q, %q) = %q: %d characters", c.server, c.tool, got, len(got))
		}
		if c.want != "" && got != c.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	a, b := mcp.ToolName("s", strings.Repeat("x", 80)+"a"), mcp.ToolName("s", strings.Repeat("x", 80)+"b")
	if a == b {
		t.Errorf("two long names cut to one: %q", a)
	}
}

func TestPermissionChain(t *testing.T) {
	read, ws := permission.Read, permission.Workspace
	for _, c := range []struct {
		name   string
		server mcp.Server
		dflt   *permission.Level
		tool   string
		want   permission.Level
	}{
		{"server tool_permissions wins over everything", mcp.Server{ToolPermissions: map[string]permission.Level{"echo": permission.Unrestricted}, Permission: &read}, &read, "echo", permission.Unrestricted},
		{"server permission over readOnlyHint", mcp.Server{Permission: &ws}, nil, "echo", permission.Workspace},
		{"readOnlyHint is read", mcp.Server{}, &ws, "echo", permission.Read},
		{"default_permission for an unannotated tool", mcp.Server{}, &ws, "write", permission.Workspace},
		{"unrestricted when nothing says", mcp.Server{}, nil, "write", permission.Unrestricted},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := stdio("t")
			srv.ToolPermissions, srv.Permission = c.server.ToolPermissions, c.server.Permission
			srv.EnabledTools = []string{"echo", "write"}
			m, _ := start(t, mcp.Options{Servers: []mcp.Server{srv}, DefaultPermission: c.dflt})
			if err := m.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			r := registry(t, m, nil)
			if got := r.Names(); len(got) != 2 {
				t.Fatalf("enabled_tools: names = %v", got)
			}
			tl, _ := r.Get("mcp__t__" + c.tool)
			if got := tl.Spec().Level; got != c.want {
				t.Errorf("level = %s, want %s", got, c.want)
			}
			if got, _ := m.Level("mcp__t__" + c.tool); got != c.want {
				t.Errorf("Manager.Level = %s, want %s", got, c.want)
			}
			// [tools.tool_permissions] for the full name comes first, in the gate.
			g := &tool.Gate{Level: func() permission.Level { return permission.Read },
				Overrides: map[string]permission.Level{"mcp__t__" + c.tool: permission.Read}}
			if v := g.Check(t.Context(), tl, tool.Call{Name: tl.Spec().Name}); !v.Allowed {
				t.Errorf("override to read refused: %s", v.Reason)
			}
		})
	}
}

func TestDisabledTools(t *testing.T) {
	srv := stdio("t")
	srv.DisabledTools = []string{"die", "hang"}
	off := stdio("off")
	off.Disabled = true
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{srv, off}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	for _, n := range r.Names() {
		if n == "mcp__t__die" || n == "mcp__t__hang" || strings.HasPrefix(n, "mcp__off__") {
			t.Errorf("%s offered", n)
		}
	}
	if st := m.Status(); st[0].Name != "off" || st[0].State != mcp.StateDisabled {
		t.Errorf("status = %+v", st)
	}
}

func TestServerThatNeverAnswers(t *testing.T) {
	silent := stdio("silent")
	silent.StartupTimeout = 300 * time.Millisecond
	silent.Required = true
	ok := stdio("ok")
	ok.Env = map[string]string{"MCPTEST_SILENT": "0"} // a server's env wins over the manager's
	m, n := start(t, mcp.Options{Servers: []mcp.Server{silent, ok},
		Env: []string{"MCPTEST_SILENT=1"}, MinBackoff: time.Hour})
	err := m.Wait(t.Context())
	if !errors.Is(err, mcp.ErrRequired) || !strings.Contains(err.Error(), "silent") {
		t.Fatalf("Wait = %v", err)
	}
	st := m.Status()
	if st[1].Name != "silent" || st[1].State != mcp.StateFailed || !strings.Contains(st[1].Err.Error(), "initialize") {
		t.Fatalf("status = %+v", st)
	}
	if st[0].State != mcp.StateConnected {
		t.Errorf("the other server: %+v", st[0])
	}
	n.waitFor(t, "MCP server silent failed to start")
	for _, x := range n.all {
		if strings.Contains(x, serverBin) {
			t.Errorf("notice names the command: %q", x)
		}
	}
}

func TestReconnectAfterDeath(t *testing.T) {
	m, n := start(t, mcp.Options{Servers: []mcp.Server{stdio("t")}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	n.reset()
	_, err := call(t, r, "mcp__t__die", `{}`)
	if !errors.Is(err, tool.ErrUnavailable) || !strings.Contains(err.Error(), "disconnected during the call: it closed the connection") {
		t.Fatalf("die: err = %v", err)
	}
	n.waitFor(t, "MCP server t disconnected")
	n.waitFor(t, "MCP server t connected")
	res, err := call(t, r, "mcp__t__echo", `{"text":"back"}`)
	if err != nil || text(res) != "echo: back" {
		t.Fatalf("after reconnect: %q, %v", text(res), err)
	}
}

func TestListChanged(t *testing.T) {
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{stdio("t")}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	changed := m.Changed()
	if res, err := call(t, r, "mcp__t__grow", `{}`); err != nil || text(res) != "grown" {
		t.Fatalf("grow = %q, %v", text(res), err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the tool list did not change")
	}
	res, err := call(t, r, "mcp__t__added", `{}`)
	if err != nil || text(res) != "added ran" {
		t.Fatalf("added = %q, %v", text(res), err)
	}
}

// httpServer serves mcptest over streamable HTTP on 127.0.0.1, checking
// a bearer token.
func httpServer(t *testing.T, o mcptest.Options) string {
	t.Helper()
	s := mcptest.New(o)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sekrit" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestHTTPHangAndCancel(t *testing.T) {
	hung := make(chan string, 4)
	url := httpServer(t, mcptest.Options{Hung: func(s string) { hung <- s }})
	srv := mcp.Server{Name: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer ${TOK}"},
		StartupTimeout: 20 * time.Second, ToolTimeout: 200 * time.Millisecond}
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{srv}, Getenv: func(k string) string {
		if k == "TOK" {
			return "sekrit"
		}
		return ""
	}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	res, err := call(t, r, "mcp__web__hang", `{}`)
	if err != nil || !res.IsError || !strings.Contains(text(res), "did not answer within 200ms") {
		t.Fatalf("hang = %+v, %v", res, err)
	}
	if got := <-hung + " " + <-hung; got != "entered cancelled" {
		t.Fatal(got)
	}
	// A canceled turn cancels the call on the server too.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	srvLong := srv
	srvLong.ToolTimeout = time.Hour
	ml, _ := start(t, mcp.Options{Servers: []mcp.Server{srvLong}, Getenv: func(string) string { return "sekrit" }})
	if err := ml.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	rl := registry(t, ml, nil)
	tl, _ := rl.Get("mcp__web__hang")
	go func() {
		_, err := tl.Run(ctx, tool.Call{Name: "mcp__web__hang", Arguments: json.RawMessage(`{}`)})
		done <- err
	}()
	if got := <-hung; got != "entered" {
		t.Fatal(got)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a canceled call returned no error")
	}
	if got := <-hung; got != "cancelled" {
		t.Fatal(got)
	}
}

func TestElicitation(t *testing.T) {
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{stdio("t")}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []mcp.Elicitation
	var mu sync.Mutex
	answer := mcp.ElicitorFunc(func(_ context.Context, e mcp.Elicitation) (mcp.ElicitResult, error) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		if e.Mode == mcp.ModeURL {
			return mcp.ElicitResult{Action: mcp.ActionAccept}, nil
		}
		return mcp.ElicitResult{Action: mcp.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
	})
	r := registry(t, m, &mcp.Binding{Elicitor: answer})
	res, err := call(t, r, "mcp__t__ask", `{"mode":"form"}`)
	if err != nil || text(res) != `accept {"name":"Ada"}` {
		t.Fatalf("form = %q, %v", text(res), err)
	}
	res, err = call(t, r, "mcp__t__ask", `{"mode":"url"}`)
	if err != nil || !strings.HasPrefix(text(res), "accept") {
		t.Fatalf("url = %q, %v", text(res), err)
	}
	if len(got) != 2 || got[0].Mode != "form" || got[0].Server != "t" || !strings.Contains(string(got[0].Schema), `"name"`) ||
		got[1].Mode != "url" || got[1].URL != "https://example.com/login" || got[1].ID != "e1" {
		t.Fatalf("elicitations = %+v", got)
	}
	// Nobody attached: declined.
	r = registry(t, m, nil)
	res, _ = call(t, r, "mcp__t__ask", `{"mode":"form"}`)
	if !strings.HasPrefix(text(res), "decline") {
		t.Fatalf("unattended = %q", text(res))
	}
}

// An HTTP server that goes away fails calls as unavailable; the
// connection is made again once it is back.
func TestHTTPReconnect(t *testing.T) {
	s := mcptest.New(mcptest.Options{})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	var down atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	m, n := start(t, mcp.Options{Servers: []mcp.Server{{Name: "web", URL: ts.URL, StartupTimeout: 20 * time.Second, ToolTimeout: 20 * time.Second}}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	down.Store(true)
	n.reset()
	if res, err := call(t, r, "mcp__web__echo", `{"text":"x"}`); !errors.Is(err, tool.ErrUnavailable) {
		t.Fatalf("call while down: %q %v", text(res), err)
	}
	n.waitFor(t, "MCP server web disconnected")
	down.Store(false)
	n.waitFor(t, "MCP server web connected")
	if res, err := call(t, r, "mcp__web__echo", `{"text":"back"}`); err != nil || text(res) != "echo: back" {
		t.Fatalf("after reconnect: %q, %v", text(res), err)
	}
}

// An MCP tool goes through the permission gate as a built-in does: a
// call above the session's level is put to the asker under its title,
// and an always-deny answer sticks.
func TestApprovalsAsForBuiltins(t *testing.T) {
	srv := stdio("t")
	srv.EnabledTools = []string{"write"}
	m, _ := start(t, mcp.Options{Servers: []mcp.Server{srv}})
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := registry(t, m, nil)
	tl, _ := r.Get("mcp__t__write")
	var asked []permission.Request
	g := &tool.Gate{Level: func() permission.Level { return permission.Workspace }, Approvals: func() bool { return true },
		Asker: permission.AskerFunc(func(_ context.Context, req permission.Request) (permission.Decision, error) {
			asked = append(asked, req)
			return permission.AlwaysDeny, nil
		})}
	c := tool.Call{ID: "c1", Name: "mcp__t__write", Arguments: json.RawMessage(`{"path":"a.txt"}`)}
	for range 2 {
		if v := g.Check(t.Context(), tl, c); v.Allowed {
			t.Fatal("allowed")
		}
	}
	if len(asked) != 1 || asked[0].Title != "mcp__t__write a.txt" || asked[0].Needs != permission.Unrestricted {
		t.Fatalf("asked %+v", asked)
	}
}
