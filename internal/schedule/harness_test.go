package schedule_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin on a machine without a zone database

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/config"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/internal/schedule/sqlitestore"
	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// firer is a func-field fake host.
type firer struct {
	mu     sync.Mutex
	held   map[string]bool
	levels map[string]permission.Level
	tools  map[string]tool.Tool
	needs  map[string]permission.Level
	fired  []fired
	// fire, when set, decides a Fire call; nil delivers.
	fire func(ctx context.Context, sessionID string, f schedule.Firing) (bool, error)
}

type fired struct {
	Session string
	schedule.Firing
}

// Text is the whole input of the fired turn.
func (f fired) Text() string {
	var parts []string
	for _, p := range f.Message.Parts {
		parts = append(parts, p.(model.Text).Text)
	}
	return strings.Join(parts, "\n")
}

func newFirer() *firer {
	return &firer{held: map[string]bool{}, levels: map[string]permission.Level{},
		tools: map[string]tool.Tool{}, needs: map[string]permission.Level{}}
}

func (f *firer) hold(sessionID string, l permission.Level) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[sessionID] = true
	f.levels[sessionID] = l
}

func (f *firer) setLevel(sessionID string, l permission.Level) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.levels[sessionID] = l
}

func (f *firer) addTool(t tool.Tool, needs permission.Level) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools[t.Spec().Name] = t
	f.needs[t.Spec().Name] = needs
}

func (f *firer) Holds(_ context.Context, id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[id]
}

func (f *firer) Level(id string) (permission.Level, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.levels[id]
	return l, ok
}

func (f *firer) Tool(_, name string) (tool.Tool, permission.Level, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tools[name]
	return t, f.needs[name], ok
}

func (f *firer) Fire(ctx context.Context, sessionID string, fr schedule.Firing) (bool, error) {
	f.mu.Lock()
	fn := f.fire
	f.mu.Unlock()
	if fn != nil {
		ok, err := fn(ctx, sessionID, fr)
		if !ok {
			return ok, err
		}
	}
	f.mu.Lock()
	f.fired = append(f.fired, fired{sessionID, fr})
	f.mu.Unlock()
	return true, nil
}

func (f *firer) take() []fired {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fired
	f.fired = nil
	return out
}

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// syncBuffer is a log sink safe for the scheduler's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// t0 is 2026-08-11 15:02 in Berlin (CEST).
var t0 = time.Date(2026, 8, 11, 13, 2, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	db    *sqlite.DB
	store schedule.Store
	firer *firer
	clock *clock
	sched *schedule.Scheduler
	log   *syncBuffer
	cwd   string
}

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// newEnv opens a database and a scheduler on it; tweak adjusts the
// options before New.
func newEnv(t *testing.T, tweak func(*schedule.Options)) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "meka.db")
	db, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{t: t, db: db, store: sqlitestore.New(db.Schedules()), firer: newFirer(), clock: &clock{t: t0}, log: &syncBuffer{}, cwd: t.TempDir()}
	opts := schedule.Options{
		Store: e.store, Firer: e.firer, Owner: "test-host",
		Location:       berlin(t),
		ParseDuration:  config.ParseDuration,
		FormatDuration: config.FormatDuration,
		Confined:       func() bool { return true },
		Now:            e.clock.Now,
		Logger:         slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if tweak != nil {
		tweak(&opts)
	}
	e.sched, err = schedule.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// session creates a session held by the fake host at level l.
func (e *env) session(l permission.Level) string {
	e.t.Helper()
	m, err := e.db.Sessions().Create(e.t.Context(), session.Meta{Cwd: e.cwd, Permission: l.String()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.firer.hold(m.ID, l)
	return m.ID
}

// call runs one of the schedule tools as the session at level l.
func (e *env) call(name, sessionID string, l permission.Level, args string) tool.Result {
	e.t.Helper()
	for _, tl := range e.sched.Tools() {
		if tl.Spec().Name != name {
			continue
		}
		v, err := tool.NewValidator([]tool.Tool{tl})
		if err != nil {
			e.t.Fatal(err)
		}
		if err := v.Validate(name, json.RawMessage(args)); err != nil {
			e.t.Fatalf("%s %s: %v", name, args, err)
		}
		res, err := tl.Run(e.t.Context(), tool.Call{ID: "c1", Name: name, Arguments: json.RawMessage(args),
			SessionID: sessionID, Cwd: e.cwd, Level: l})
		if err != nil {
			e.t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	e.t.Fatalf("no tool %s", name)
	return tool.Result{}
}

func text(r tool.Result) string {
	var parts []string
	for _, p := range r.Content {
		parts = append(parts, p.(model.Text).Text)
	}
	return strings.Join(parts, "\n")
}

// create makes a job through schedule_create and returns its full id.
func (e *env) create(sessionID string, l permission.Level, args string) string {
	e.t.Helper()
	res := e.call(schedule.CreateToolName, sessionID, l, args)
	if res.IsError {
		e.t.Fatalf("schedule_create %s: %s", args, text(res))
	}
	var short string
	if _, err := fmt.Sscanf(text(res), "Created job %8s", &short); err != nil {
		e.t.Fatalf("reply %q: %v", text(res), err)
	}
	j, err := e.store.Get(e.t.Context(), short)
	if err != nil {
		e.t.Fatal(err)
	}
	return j.ID
}

func (e *env) job(id string) (schedule.Job, bool) {
	e.t.Helper()
	j, err := e.store.Get(e.t.Context(), id)
	if errors.Is(err, schedule.ErrNotFound) {
		return schedule.Job{}, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return j, true
}

func (e *env) sweep(now time.Time) schedule.SweepResult {
	e.t.Helper()
	e.clock.Set(now)
	res, err := e.sched.Sweep(e.t.Context(), now)
	if err != nil {
		e.t.Fatalf("sweep: %v", err)
	}
	return res
}

// insert stores a job directly, as a host that created it earlier would
// have.
func (e *env) insert(j schedule.Job) schedule.Job {
	e.t.Helper()
	if j.Zone == "" {
		j.Zone = "Europe/Berlin"
	}
	if j.Level == "" {
		j.Level = "unrestricted"
	}
	if j.Prompt == "" {
		j.Prompt = "do the thing"
	}
	j.Cwd = e.cwd
	out, err := e.store.Create(e.t.Context(), j, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// fakeTool is a tool whose result a test sets.
type fakeTool struct {
	name string
	mu   sync.Mutex
	run  func(ctx context.Context, call tool.Call) (tool.Result, error)
	seen []tool.Call
}

func (f *fakeTool) Spec() tool.Spec {
	return tool.Spec{Name: f.name, Description: "a probe", Level: permission.Read,
		Schema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false}`)}
}

func (f *fakeTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	f.mu.Lock()
	f.seen = append(f.seen, call)
	run := f.run
	f.mu.Unlock()
	return run(ctx, call)
}

func (f *fakeTool) set(run func(ctx context.Context, call tool.Call) (tool.Result, error)) {
	f.mu.Lock()
	f.run = run
	f.mu.Unlock()
}

func (f *fakeTool) returns(s string, isErr bool) {
	f.set(func(context.Context, tool.Call) (tool.Result, error) {
		r := tool.Text(s)
		r.IsError = isErr
		return r, nil
	})
}

func agentInfo() agent.RequestInfo { return agent.RequestInfo{Turn: 1} }
