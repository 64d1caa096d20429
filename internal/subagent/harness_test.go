package subagent_test

import (
	"context"
	"encoding/json"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan/checklist"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// router is the model of every session of a test: the parent's requests
// play the parent's script, a sub-agent's play the script of its task
// (the text of its first message). before, when set, is called with every
// sub-agent request before it is answered.
type router struct {
	t      testing.TB
	parent *script.Provider

	mu       sync.Mutex // guards children
	children map[string]*script.Provider
	before   func(ctx context.Context, task string, req *model.Request) error
	// after, when set, is called once a sub-agent's answer was streamed.
	after func(task string)
}

func (r *router) Name() string { return script.Name }

func (r *router) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	if !strings.Contains(req.System, "# Sub-agent") {
		return r.parent.Stream(ctx, req)
	}
	task := firstText(req)
	r.mu.Lock()
	p, ok := r.children[task]
	before := r.before
	r.mu.Unlock()
	if !ok {
		return func(yield func(model.Event, error) bool) {
			yield(nil, &model.Error{Provider: "test", Status: 400, Body: "no script for sub-agent task " + task})
		}
	}
	if before != nil {
		if err := before(ctx, task, req); err != nil {
			return func(yield func(model.Event, error) bool) { yield(nil, err) }
		}
	}
	r.mu.Lock()
	after := r.after
	r.mu.Unlock()
	if after == nil {
		return p.Stream(ctx, req)
	}
	return func(yield func(model.Event, error) bool) {
		defer after(task)
		for ev, err := range p.Stream(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

func firstText(req *model.Request) string {
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			for _, p := range m.Parts {
				if t, ok := p.(model.Text); ok {
					return t.Text
				}
			}
		}
	}
	return ""
}

func parse(t testing.TB, rounds string) *script.Provider {
	t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return script.New(s)
}

// fixture is a host on a real SQLite file whose sessions have the
// checklist, a probe tool (workspace level) and the agent_* tools.
type fixture struct {
	t      testing.TB
	db     *sqlite.DB
	model  *router
	probes chan tool.Call // every probe call, by any session
	// steered is closed once an agent_steer call has returned.
	steered     chan struct{}
	steeredOnce sync.Once
	depth       int
	// maxParallel is [agents] max_parallel, 0 for the default.
	maxParallel int
	// defs are the named definitions offered, and resolved at a child's
	// load.
	defs []subagent.Definition
	opts host.Options
	h    *host.Host

	evMu   sync.Mutex // guards events
	events map[string][]agent.Event
}

func newFixture(t testing.TB, parentRounds string, children map[string]string) *fixture {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &router{t: t, parent: parse(t, parentRounds), children: make(map[string]*script.Provider)}
	for task, rounds := range children {
		r.children[task] = parse(t, rounds)
	}
	f := &fixture{t: t, db: db, model: r, probes: make(chan tool.Call, 100), steered: make(chan struct{}), depth: 1, events: make(map[string][]agent.Event)}
	probe := &funcTool{spec: tool.Spec{Name: "probe", Description: "probe", Schema: json.RawMessage(`{"type":"object"}`),
		Level: permission.Workspace, Kind: tool.KindEdit, ParallelSafe: true},
		run: func(_ context.Context, c tool.Call) (tool.Result, error) {
			f.probes <- c
			return tool.Text("probed at " + c.Level.String()), nil
		}}
	f.opts = host.Options{
		Definitions: func(_, name string) (host.Definition, error) {
			for _, d := range f.defs {
				if d.Name == name {
					return host.Definition{Tools: d.Tools, Prompt: d.Prompt, MaxTurns: d.MaxTurns}, nil
				}
			}
			return host.Definition{}, subagent.ErrUnknown
		},
		Store:       db.Sessions(),
		Holder:      session.Holder{Token: "one"},
		Profiles:    func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: r}, nil },
		Tools:       func(host.Env) ([]tool.Tool, error) { return []tool.Tool{probe}, nil },
		Permissions: host.Permissions{Default: permission.Workspace},
		DataDir:     t.TempDir(),
		Extensions: []host.ExtensionFunc{
			func(env host.Env) (host.Extension, error) {
				return checklist.New(checklist.Options{Tasks: env.Tasks, Denied: env.Denied}).Compose(), nil
			},
			func(env host.Env) (host.Extension, error) {
				// Every session's events are kept, from the first.
				id := env.SessionID
				env.Session.Subscribe(func(ev agent.Event) {
					f.evMu.Lock()
					f.events[id] = append(f.events[id], ev)
					f.evMu.Unlock()
				})
				if env.Depth >= f.depth {
					return host.Extension{}, nil
				}
				tools := subagent.Tools(subagent.Options{Spawner: env.Session.Spawner(), MaxParallel: f.maxParallel, Definitions: f.defs,
					ScratchDir: filepath.Join(env.DataDir, "scratch")})
				for i, tl := range tools {
					if tl.Spec().Name == subagent.SteerName {
						tools[i] = &funcTool{spec: tl.Spec(), run: func(ctx context.Context, c tool.Call) (tool.Result, error) {
							defer f.steeredOnce.Do(func() { close(f.steered) })
							return tl.Run(ctx, c)
						}}
					}
				}
				return host.Extension{Tools: tools}, nil
			},
		},
	}
	return f
}

func (f *fixture) host() *host.Host {
	f.t.Helper()
	if f.h != nil {
		return f.h
	}
	h, err := host.New(f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { h.Close(context.Background()) })
	f.h = h
	return h
}

func (f *fixture) parent() *host.Session {
	f.t.Helper()
	s, err := f.host().Create(f.t.Context(), host.CreateOptions{Cwd: f.t.TempDir()})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) eventsOf(id string) []agent.Event {
	f.evMu.Lock()
	defer f.evMu.Unlock()
	return append([]agent.Event(nil), f.events[id]...)
}

// children returns the sub-agent sessions of id, newest first.
func (f *fixture) children(id string) []session.Meta {
	f.t.Helper()
	page, err := f.db.Sessions().List(f.t.Context(), session.ListOptions{Parent: id})
	if err != nil {
		f.t.Fatal(err)
	}
	return page.Sessions
}

func (f *fixture) rows(id string) []session.Row {
	f.t.Helper()
	rows, err := f.db.Sessions().Rows(f.t.Context(), id, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return rows
}

type funcTool struct {
	spec tool.Spec
	run  func(ctx context.Context, c tool.Call) (tool.Result, error)
}

func (f *funcTool) Spec() tool.Spec { return f.spec }
func (f *funcTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	return f.run(ctx, c)
}

func results(rows []session.Row) []session.ToolResult {
	var out []session.ToolResult
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			out = append(out, tr)
		}
	}
	return out
}

func text(ps model.Parts) string {
	var b strings.Builder
	for _, p := range ps {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// requestText is everything a request shows the model, for searching.
func requestText(req *model.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case model.Text:
				b.WriteString(p.Text + "\n")
			case model.ToolResult:
				b.WriteString(text(p.Content) + "\n")
			}
		}
	}
	return b.String()
}
