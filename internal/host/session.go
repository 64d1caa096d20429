package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Session is a session this host holds open.
type Session struct {
	h       *Host
	id      string
	lock    session.Lock
	engine  *agent.Engine
	folds   []session.Fold // the extensions' folds, for Plan
	gate    *tool.Gate
	tools   *tool.Registry
	profile Profile
	dataDir string
	// checkpoints records what turns change; nil when off.
	checkpoints *checkpointGuard
	level       atomic.Int32
	files       sessionFiles
	// prompt is the system prompt the engine's requests start with.
	prompt       *sessionPrompt
	startNotices []session.Notice
	// onApproval and onClose are the extensions' host seams.
	onApproval []func(context.Context, permission.Request)
	onClose    []func(context.Context) []session.Entry
	loaded     loadedSkills
	// approvals is whether a call above the level is put to the asker.
	approvals atomic.Bool
	// used is when the session was last used (unix nanoseconds), for the
	// idle sweep.
	used atomic.Int64
	// parent is the session a sub-agent's session belongs to (children.go);
	// depth counts its ancestors and label names it to a person. Set at
	// load, never changed.
	parent *Session
	depth  int
	label  string

	mu     sync.Mutex // guards meta, subs, nextSub, inbox, cancel, asker, elicitor, closed
	closed bool       // set by close before it waits for the turn

	metaMu sync.Mutex // serializes changes of the stored description
	meta   session.Meta
	subs   map[int]func(agent.Event)
	// childSubs are OnChild's subscribers, numbered from nextSub too.
	childSubs map[int]func(*Session)
	nextSub   int
	inbox     []model.Part
	cancel    context.CancelCauseFunc
	asker     permission.Asker
	// elicitor answers MCP elicitations; nil declines.
	elicitor Elicitor

	turns sync.WaitGroup // running turns

	tasks        *task.Registry
	taskDone     chan struct{} // a task ended
	idle         chan struct{} // a turn ended
	stop         chan struct{} // closed by shutdown
	reporterDone chan struct{}
	stopOnce     sync.Once
}

// ErrClosed is returned by a session that was closed.
var ErrClosed = errors.New("session is closed")

// ErrCanceled is the cause given to a turn canceled by Cancel.
var ErrCanceled = errors.New("turn canceled")

func (h *Host) load(ctx context.Context, meta session.Meta, lock session.Lock, added *string) (_ *Session, err error) {
	prof, err := h.opts.Profiles(meta.Profile)
	if err != nil {
		return nil, err
	}
	level, err := permission.ParseLevel(meta.Permission)
	if err != nil {
		level = h.opts.Permissions.Default
	}
	s := &Session{h: h, id: meta.ID, lock: lock, meta: meta, profile: prof, subs: make(map[int]func(agent.Event))}
	s.level.Store(int32(level))
	s.approvals.Store(meta.Approvals)
	s.Touch()
	if h.opts.DataDir != "" {
		s.dataDir = filepath.Join(h.opts.DataDir, "sessions", meta.ID)
		if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("create session directory: %w", err)
		}
	}
	s.gate = &tool.Gate{
		Level:     s.Level,
		Overrides: h.opts.Permissions.ToolLevels,
		Approvals: s.approvals.Load,
		Asker:     permission.AskerFunc(s.ask),
	}
	defer func() {
		if err != nil {
			s.shutdown() // the task registry and the report goroutine
		}
	}()
	var def Definition
	if meta.ParentID != "" {
		if def, err = h.adopt(s, meta); err != nil {
			return nil, err
		}
	}
	extra, readable := h.roots()
	wide := meta
	wide.AdditionalDirs = mergeDirs(meta.Cwd, meta.AdditionalDirs, extra)
	s.files.roots = func() []string {
		m := s.Meta()
		return append([]string{m.Cwd}, mergeDirs(m.Cwd, m.AdditionalDirs, extra)...)
	}
	s.tools = tool.NewRegistry(h.opts.Deny...)
	s.tools.Allow(def.Tools...)
	env := Env{SessionID: meta.ID, Meta: wide, Profile: prof, DataDir: s.dataDir, Level: s.Level, Project: s.Project,
		Files: &s.files, ReadableDirs: readable, Denied: s.tools.Denied, Depth: s.depth, Session: s}
	// A sub-agent has no background tasks: nothing would be there to take
	// their reports once its turn has answered the parent.
	if s.dataDir != "" && s.parent == nil {
		s.startTasks()
		env.Tasks, env.TaskRegistry = s, s.tasks
	}

	rows, err := h.opts.Store.Rows(ctx, meta.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	if h.opts.Tools != nil {
		ts, err := h.opts.Tools(env)
		if err != nil {
			return nil, fmt.Errorf("build tools: %w", err)
		}
		if err := s.tools.Add(attachInstructions(ts, h.instructionOptions(meta.Cwd), rows)...); err != nil {
			return nil, err
		}
	}
	list, problems := h.discoverSkills(meta.Cwd)
	s.loaded.seed(rows)
	st := skillTools(s)
	if len(list) == 0 {
		st = st[1:] // nothing to load: only skill_write
	}
	if err := s.tools.Add(st...); err != nil {
		return nil, err
	}
	record := s.addMCP()
	opts := agent.Options{
		Provider: prof.Provider, Log: logFunc(func(ctx context.Context, rows []session.Row) ([]session.Row, error) {
			return h.opts.Store.Append(ctx, meta.ID, rows)
		}),
		Tools: s.tools, Gate: s.gate, SessionID: meta.ID, Cwd: meta.Cwd,
		MaxTurns: h.opts.MaxTurns, MaxToolCalls: h.opts.MaxToolCalls,
		ContextWindow: prof.ContextWindow, MaxOutputTokens: prof.MaxOutputTokens, Vision: prof.Vision,
		Events: s.publish, Inbox: s.drainInbox, Now: h.opts.Now, Logger: h.opts.Logger.With("session_id", meta.ID),
	}
	for _, ext := range h.opts.Extensions {
		x, err := ext(env)
		if err != nil {
			return nil, fmt.Errorf("build extension: %w", err)
		}
		if err := s.tools.Add(x.Tools...); err != nil {
			return nil, err
		}
		opts.Contributors = append(opts.Contributors, x.Contributors...)
		opts.Interceptors = append(opts.Interceptors, x.Interceptors...)
		opts.Compactors = append(opts.Compactors, x.Compactors...)
		opts.Folds = append(opts.Folds, x.Folds...)
		opts.Guards = append(opts.Guards, x.Guards...)
		opts.PromptGuards = append(opts.PromptGuards, x.PromptGuards...)
		opts.ToolRecorders = append(opts.ToolRecorders, x.Recorders...)
		s.onApproval = append(s.onApproval, x.Approvals...)
		s.onClose = append(s.onClose, x.Closers...)
	}
	if g := h.checkpointGuardFor(ctx, meta.ID, append([]string{wide.Cwd}, wide.AdditionalDirs...)); g != nil {
		s.checkpoints = g
		opts.Guards = append(opts.Guards, g)
	}
	opts.Compactors = append(opts.Compactors, &s.loaded)
	if record != nil {
		opts.Folds = append(opts.Folds, record, record.search)
		opts.ToolRecorders = append(opts.ToolRecorders, record)
	}
	extraPrompt := ""
	if s.parent != nil {
		extraPrompt = childSystem(def) // recorded with the prompt it is part of
	}
	s.prompt = h.sessionPrompt(wide, s.Level(), prof, rows, h.takeReload(meta.ID), list, problems, extraPrompt, added)
	if s.prompt.reused {
		opts.System = s.prompt.rec.Text
	} else {
		opts.Prelude = s.prompt.prelude
	}
	s.startNotices = skillNotices(problems)
	if def.MaxTurns > 0 {
		opts.MaxTurns = def.MaxTurns
	}
	s.folds = opts.Folds
	s.engine, err = agent.New(opts, rows)
	if err != nil {
		return nil, err
	}
	// Calls a dead holder left without a result are closed now, while the
	// lock is held, so every reader of the log sees the same session.
	if _, err := s.engine.Recover(ctx); err != nil {
		return nil, fmt.Errorf("close interrupted calls: %w", err)
	}
	return s, nil
}

type logFunc func(ctx context.Context, rows []session.Row) ([]session.Row, error)

func (f logFunc) Append(ctx context.Context, rows []session.Row) ([]session.Row, error) {
	return f(ctx, rows)
}

// Plan returns the session's plan as it stands (checklist, update_plan or
// write_todos), for a front door that attaches after it was announced;
// ok is false when the session keeps none.
func (s *Session) Plan() (c plan.Changed, ok bool) {
	for _, f := range s.folds {
		if sn, isPlan := f.(plan.Snapshotter); isPlan {
			if c, ok := sn.Snapshot(); ok {
				return c, true
			}
		}
	}
	return plan.Changed{}, false
}

// StoredPlan is Session.Plan for a session whether or not it is open
// here: a session this host holds answers from its folds, any other from
// its log, folded as opening it would fold it, without opening it (another
// process may hold it). ok is false when the session keeps no plan.
//
// A plan folded from a log is kept with the session's updated_at and
// profile: updated_at moves with every append and rewind, so while both
// match the kept plan is the log's, and a listing folds only the logs
// that changed since it last looked.
func (h *Host) StoredPlan(ctx context.Context, meta session.Meta) (c plan.Changed, ok bool, err error) {
	if s, held := h.Get(meta.ID); held {
		c, ok = s.Plan()
		return c, ok, nil
	}
	if p, hit := h.plans.get(meta); hit {
		return p.c, p.ok, nil
	}
	rows, err := h.opts.Store.Rows(ctx, meta.ID, 0)
	if err != nil {
		return c, false, fmt.Errorf("read plan: %w", err)
	}
	c, ok, err = h.foldPlan(meta, rows)
	if err == nil {
		h.plans.put(meta, foldedPlan{c: c, ok: ok})
	}
	return c, ok, err
}

// foldPlan folds a session's rows through the plan folds of its
// extensions.
func (h *Host) foldPlan(meta session.Meta, rows []session.Row) (c plan.Changed, ok bool, err error) {
	level, lerr := permission.ParseLevel(meta.Permission)
	if lerr != nil {
		level = h.opts.Permissions.Default
	}
	env := Env{SessionID: meta.ID, Meta: meta, Profile: Profile{Name: meta.Profile},
		Level: func() permission.Level { return level }, Project: func() string { return meta.Project },
		Denied: tool.NewRegistry(h.opts.Deny...).Denied}
	if meta.ParentID != "" {
		env.Depth = 1
	}
	var folds []session.Fold
	for _, ext := range h.opts.Extensions {
		x, err := ext(env)
		if err != nil {
			return c, false, fmt.Errorf("read plan: %w", err)
		}
		folds = append(folds, x.Folds...)
	}
	if err := session.NewFolder(folds...).Replay(rows); err != nil {
		return c, false, fmt.Errorf("read plan: %w", err)
	}
	for _, f := range folds {
		if sn, isPlan := f.(plan.Snapshotter); isPlan {
			if c, ok := sn.Snapshot(); ok {
				return c, true, nil
			}
		}
	}
	return plan.Changed{}, false, nil
}

// foldedPlan is a plan folded from a log, or that the log keeps none.
type foldedPlan struct {
	c  plan.Changed
	ok bool
}

// planCache keeps the plans StoredPlan folded, each stamped with the
// session's updated_at and profile when it was read.
type planCache struct {
	mu sync.Mutex
	m  map[string]stampedPlan
}

type stampedPlan struct {
	foldedPlan
	updatedAt time.Time
	profile   string
}

// planCacheSize bounds the plans kept: a listing's pages, several over.
const planCacheSize = 1024

func (pc *planCache) get(meta session.Meta) (foldedPlan, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p, ok := pc.m[meta.ID]
	if !ok || !p.updatedAt.Equal(meta.UpdatedAt) || p.profile != meta.Profile {
		return foldedPlan{}, false
	}
	return p.foldedPlan, true
}

func (pc *planCache) put(meta session.Meta, p foldedPlan) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.m == nil || len(pc.m) >= planCacheSize {
		pc.m = make(map[string]stampedPlan) // start over rather than track use
	}
	pc.m[meta.ID] = stampedPlan{foldedPlan: p, updatedAt: meta.UpdatedAt, profile: meta.Profile}
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Meta returns the session's description as this host last stored it.
func (s *Session) Meta() session.Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

// Profile returns the session's profile.
func (s *Session) Profile() Profile { return s.profile }

// Engine returns the session's engine, for front doors reading its rows
// and folds.
func (s *Session) Engine() *agent.Engine { return s.engine }

// Tools returns the tools the session offers.
func (s *Session) Tools() *tool.Registry { return s.tools }

// Confinement says what confines the session's shell commands, as
// /status shows it; empty when the composition root did not say.
func (s *Session) Confinement() string {
	if s.h.opts.Confinement == nil {
		return ""
	}
	return s.h.opts.Confinement()
}

// Level returns the session's permission level now; a sub-agent's is never
// above its parent's, whose changes apply to its next call.
func (s *Session) Level() permission.Level {
	l := permission.Level(s.level.Load())
	if s.parent != nil {
		l = min(l, s.parent.Level())
	}
	return l
}

// SetLevel changes the session's level and stores it. It applies to the
// next tool call, even inside a running turn.
func (s *Session) SetLevel(ctx context.Context, l permission.Level) error {
	if !s.h.opts.Permissions.Offers(l) {
		return fmt.Errorf("set level: %w: %s", ErrLevelNotEnabled, l)
	}
	if err := s.h.checkWorkspace(s.Meta().Cwd, l); err != nil {
		return fmt.Errorf("set level: %w", err)
	}
	if err := s.updateMeta(ctx, func(m *session.Meta) error { m.Permission = l.String(); return nil }); err != nil {
		return fmt.Errorf("set level: %w", err)
	}
	s.level.Store(int32(l))
	return nil
}

// Update changes the session's stored description with edit, which may
// change its title, cwd (an existing directory, recorded canonically),
// additional directories, profile, project and permission. A changed cwd,
// profile or directory applies once the session is opened again
// (Host.Reopen); use SetLevel for the level.
func (s *Session) Update(ctx context.Context, edit func(m *session.Meta)) error {
	err := s.updateMeta(ctx, func(m *session.Meta) error {
		cwd, parent := m.Cwd, m.ParentID
		edit(m)
		m.ID, m.ParentID = s.id, parent
		if m.Cwd != cwd {
			c, err := Canonical(m.Cwd)
			if err != nil {
				return fmt.Errorf("cwd: %w", err)
			}
			if err := s.h.checkWorkspace(c, s.Level()); err != nil {
				return err
			}
			m.Cwd = c
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update session: %w", err)
	}
	return nil
}

// updateMeta changes the stored description with edit and then the copy
// held here. Changes are serialized, so that two of them (a title set by a
// turn, a level set by a front door) never undo each other.
func (s *Session) updateMeta(ctx context.Context, edit func(m *session.Meta) error) error {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	s.mu.Lock()
	m := s.meta
	s.mu.Unlock()
	m.AdditionalDirs = slices.Clone(m.AdditionalDirs)
	if err := edit(&m); err != nil {
		return err
	}
	if err := s.h.opts.Store.Update(ctx, m); err != nil {
		return err
	}
	s.mu.Lock()
	s.meta = m
	s.mu.Unlock()
	return nil
}

// setTitle gives an untitled session the words of its first message,
// here only: the store titles it in the transaction that appends that
// message (session.TitleOf, in both stores), so a write of its own would
// be a second transaction for the same title, on every new session's
// first turn. Under metaMu, so a front door's Update (which stores the
// whole description) either precedes it or carries the title.
func (s *Session) setTitle(msg session.UserMessage) {
	s.metaMu.Lock()
	defer s.metaMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta.Title == "" {
		s.meta.Title = session.TitleOf(msg)
	}
}

// Subscribe calls fn with every event of the session until the returned
// function is called. fn is called from the turn's goroutine, one event
// at a time, and must not block for long.
func (s *Session) Subscribe(fn func(agent.Event)) (unsubscribe func()) {
	s.mu.Lock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

// OnChild calls fn with each sub-agent session of s as it opens, spawned
// or taken up again by a follow-up, before it runs a turn, so a front door
// can show its work as a session of its own. fn runs on the goroutine of
// the call that spawns it and must not block.
func (s *Session) OnChild(fn func(child *Session)) (stop func()) {
	s.mu.Lock()
	id := s.nextSub
	s.nextSub++
	if s.childSubs == nil {
		s.childSubs = make(map[int]func(*Session))
	}
	s.childSubs[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.childSubs, id)
		s.mu.Unlock()
	}
}

// childOpened tells OnChild's subscribers of c.
func (s *Session) childOpened(c *Session) {
	s.mu.Lock()
	fns := make([]func(*Session), 0, len(s.childSubs))
	for _, fn := range s.childSubs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

func (s *Session) publish(ev agent.Event) {
	s.mu.Lock()
	fns := make([]func(agent.Event), 0, len(s.subs))
	for _, fn := range s.subs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}

// Announce shows a notice to the session's front doors without a turn: a
// stage direction or a warning about work done on the session's behalf,
// such as a scheduled turn that failed.
func (s *Session) Announce(n session.Notice) { s.publish(agent.Notice{Notice: n}) }

// SetAsker routes approval requests to a front door; nil means nobody is
// attached and every request is denied at once.
func (s *Session) SetAsker(a permission.Asker) {
	s.mu.Lock()
	s.asker = a
	s.mu.Unlock()
}

func (s *Session) ask(ctx context.Context, req permission.Request) (permission.Decision, error) {
	for _, f := range s.onApproval {
		f(ctx, req)
	}
	if s.parent != nil {
		return s.forward(ctx, req)
	}
	s.mu.Lock()
	a := s.asker
	s.mu.Unlock()
	if a == nil {
		return permission.Deny, nil
	}
	return a.Ask(ctx, req)
}

// Approvals reports whether a call above the session's level is put to
// the front door's asker rather than refused; a sub-agent follows its
// parent.
func (s *Session) Approvals() bool {
	if s.parent != nil {
		return s.parent.Approvals()
	}
	return s.approvals.Load()
}

// SetApprovals switches approvals and stores the switch on the session's
// row; like a level change it applies to the next tool call, even inside a
// running turn, and load and resume restore it.
func (s *Session) SetApprovals(ctx context.Context, on bool) error {
	if err := s.updateMeta(ctx, func(m *session.Meta) error { m.Approvals = on; return nil }); err != nil {
		return fmt.Errorf("set approvals: %w", err)
	}
	s.approvals.Store(on)
	return nil
}

// Touch records that a front door used the session, for the idle sweep.
func (s *Session) Touch() { s.used.Store(s.h.opts.Now().UnixNano()) }

// LastUsed returns when the session was last used: a turn started or
// ended, or a front door touched it.
func (s *Session) LastUsed() time.Time { return time.Unix(0, s.used.Load()) }

// mergeDirs returns dirs followed by those of extra not already among
// them, nor cwd.
func mergeDirs(cwd string, dirs, extra []string) []string {
	if len(extra) == 0 {
		return dirs
	}
	out := slices.Clone(dirs)
	for _, d := range extra {
		if d != cwd && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Steer queues a message for the running turn; it rides the next tool
// results or reminder. It reports false when no turn is running, and the
// message is then not queued.
func (s *Session) Steer(parts ...model.Part) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel == nil {
		return false
	}
	s.inbox = append(s.inbox, parts...)
	return true
}

func (s *Session) drainInbox() []model.Part {
	s.mu.Lock()
	defer s.mu.Unlock()
	parts := s.inbox
	s.inbox = nil
	return parts
}

// Prompt runs a turn with a message from the user.
func (s *Session) Prompt(ctx context.Context, parts ...model.Part) (agent.Result, error) {
	return s.Run(ctx, session.UserMessage{Parts: parts})
}

// Run runs a turn with msg as its input. Cancel (or ctx) cancels it.
func (s *Session) Run(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
	return s.run(ctx, msg, nil)
}

// run runs a turn; started, when set, is called once the turn is sure to
// run, before the engine starts it.
func (s *Session) run(ctx context.Context, msg session.UserMessage, started func()) (agent.Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s.mu.Lock()
	if s.closed || s.subs == nil {
		s.mu.Unlock()
		return agent.Result{}, ErrClosed
	}
	if s.cancel != nil {
		s.mu.Unlock()
		return agent.Result{}, agent.ErrBusy
	}
	s.cancel = cancel
	s.turns.Add(1)
	s.mu.Unlock()
	s.Touch()
	defer func() {
		s.Touch()
		s.mu.Lock()
		s.cancel = nil
		dropped := len(s.inbox)
		s.inbox = nil
		s.mu.Unlock()
		if dropped > 0 {
			// Only a turn that was cancelled or failed (or a message that
			// arrived as it ended) leaves one: say so, never drop it
			// silently.
			s.Announce(session.Notice{Severity: session.SeverityWarning,
				Title: "A message sent during the turn was not delivered: the turn ended first; send it again"})
		}
		s.turns.Done()
		s.signalIdle()
	}()
	if started != nil {
		started()
	}
	msg, err := s.expandSkill(msg)
	if err != nil {
		return agent.Result{}, err
	}
	s.setTitle(msg)
	s.waitMCP(ctx)
	return s.engine.Run(ctx, msg)
}

// Busy reports whether a turn is running.
func (s *Session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancel != nil
}

// Cancel cancels the running turn, if any.
func (s *Session) Cancel() {
	s.mu.Lock()
	c := s.cancel
	s.mu.Unlock()
	if c != nil {
		c(ErrCanceled)
	}
}

// Compact summarizes older turns now.
func (s *Session) Compact(ctx context.Context) error { return s.engine.Compact(ctx) }

// CompactFocus summarizes older turns now, keeping focus in particular
// (/compact focus).
func (s *Session) CompactFocus(ctx context.Context, focus string) error {
	return s.engine.CompactFocus(ctx, focus)
}

func (s *Session) close(ctx context.Context) error {
	// Closed first, so that no turn starts between the wait and the
	// release.
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Cancel()
	s.turns.Wait()
	var ended error
	if s.engine != nil {
		var rows []session.Row
		for _, f := range s.onClose {
			for _, en := range f(ctx) {
				rows = append(rows, session.Row{Turn: session.LastTurn(s.engine.Rows()), Entry: en})
			}
		}
		if len(rows) > 0 {
			_, ended = s.h.opts.Store.Append(context.WithoutCancel(ctx), s.id, rows)
		}
	}
	s.shutdown()
	return errors.Join(ended, s.lock.Release(context.WithoutCancel(ctx)))
}

// shutdown stops what the session owns, but not its lock: the report
// deliverer, then the tasks, then the checkpoints' watches.
func (s *Session) shutdown() {
	s.stopOnce.Do(func() {
		s.prompt.stop()
		if s.stop != nil {
			close(s.stop)
			<-s.reporterDone
			_ = s.tasks.Close()
		}
		if s.checkpoints != nil {
			s.checkpoints.store.Close() // its roots' watches
		}
		s.mu.Lock()
		s.subs = nil
		s.mu.Unlock()
		s.gate.Forget()
	})
}
