package repl

import (
	"context"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// fakeSession is a Session whose behaviour each test sets through its
// func fields; calls are recorded.
type fakeSession struct {
	mu       sync.Mutex
	id       string
	level    permission.Level
	steered  []string
	focuses  []string // what /compact was asked to keep
	canceled int
	closed   bool
	meta     session.Meta
	rows     []session.Row
	sub      func(agent.Event)
	asker    permission.Asker

	run      func(ctx context.Context, msg session.UserMessage) (agent.Result, error)
	steer    func(text string) bool
	setLevel func(l permission.Level) error
}

func newFake() *fakeSession {
	return &fakeSession{id: "0b5c1e2a-1111-2222-3333-444455556666", level: permission.Workspace,
		meta: session.Meta{Cwd: "/work/project"}}
}

func (f *fakeSession) ID() string          { return f.id }
func (f *fakeSession) Meta() session.Meta  { return f.meta }
func (f *fakeSession) ProfileName() string { return "opus" }
func (f *fakeSession) ContextWindow() int  { return 200000 }
func (f *fakeSession) Level() permission.Level {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.level
}

func (f *fakeSession) SetLevel(_ context.Context, l permission.Level) error {
	if f.setLevel != nil {
		if err := f.setLevel(l); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.level = l
	f.mu.Unlock()
	return nil
}

func (f *fakeSession) Subscribe(fn func(agent.Event)) func() {
	f.mu.Lock()
	f.sub = fn
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.sub = nil
		f.mu.Unlock()
	}
}

// emit sends an event as the session's turn goroutine would.
func (f *fakeSession) emit(ev agent.Event) {
	f.mu.Lock()
	fn := f.sub
	f.mu.Unlock()
	if fn != nil {
		fn(ev)
	}
}

func (f *fakeSession) SetAsker(a permission.Asker) {
	f.mu.Lock()
	f.asker = a
	f.mu.Unlock()
}

func (f *fakeSession) Run(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
	if f.run != nil {
		return f.run(ctx, msg)
	}
	return agent.Result{Stop: agent.StopEndTurn}, nil
}

func (f *fakeSession) Steer(parts ...model.Part) bool {
	text := messageText(parts)
	if f.steer != nil && !f.steer(text) {
		return false
	}
	f.mu.Lock()
	f.steered = append(f.steered, text)
	f.mu.Unlock()
	return true
}

func (f *fakeSession) Cancel() {
	f.mu.Lock()
	f.canceled++
	f.mu.Unlock()
}

func (f *fakeSession) Rows() []session.Row { return f.rows }
func (f *fakeSession) Status() string {
	return "Permission: " + f.Level().String() + "\nProfile: opus\nContext: 0 of 200000 tokens (0%)"
}
func (f *fakeSession) CompactFocus(_ context.Context, focus string) error {
	f.mu.Lock()
	f.focuses = append(f.focuses, focus)
	f.mu.Unlock()
	return nil
}
func (f *fakeSession) Withdraw(context.Context, int64) error { return nil }
func (f *fakeSession) RewindFiles(context.Context, int64, bool) (host.RewindResult, error) {
	return host.RewindResult{}, host.ErrNoCheckpoints
}
func (f *fakeSession) TurnFiles(context.Context) ([]host.TurnChanges, error) {
	return nil, host.ErrNoCheckpoints
}
func (f *fakeSession) Update(_ context.Context, edit func(*session.Meta)) error {
	edit(&f.meta)
	return nil
}
func (f *fakeSession) Reopen(context.Context) (Session, error) { return f, nil }
func (f *fakeSession) Fork(context.Context) (Session, error)   { return f, nil }
func (f *fakeSession) Close(context.Context) error             { f.closed = true; return nil }

// clock is a settable time for the screen's timers.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 8, 11, 15, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func keyText(s string) tea.KeyPressMsg  { return tea.KeyPressMsg{Text: s, Code: []rune(s)[0]} }
func keyCode(code rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code} }
func keyMod(code rune, mod tea.KeyMod) tea.KeyPressMsg {
	return tea.KeyPressMsg{Code: code, Mod: mod}
}
