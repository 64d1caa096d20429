// Package host owns session lifecycle for every front door: create, open
// (with the session lock), resume, fork, close, the event fan-out, the
// approval routing seam, steering, and delivery of background task
// reports. One-shot mode, ACP, the terminal and the HTTP API are thin
// adapters on it.
//
// It composes an agent.Engine per session from the profile, the built-in
// tools and the extensions (plan dialects) the composition root gives it.
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Profile is a resolved model profile.
type Profile struct {
	Name     string
	Provider model.Provider
	// Model names the model, for the system prompt and transcripts.
	Model           string
	ContextWindow   int
	MaxOutputTokens int
	// MaxRequestBytes bounds what one prompt may add to a request; 0 means
	// DefaultMaxRequestBytes (RequestLimit).
	MaxRequestBytes int
	Vision          bool
	// ReasoningEffort is the profile's reasoning_effort, for /status; the
	// provider already has it.
	ReasoningEffort string
	// RateLimits, when set, is the newest rate limit any session on the
	// profile was told; /status shows it until the session's own calls
	// say more.
	RateLimits func() *model.RateLimit
}

// DefaultMaxRequestBytes bounds a prompt when the profile sets no bound: a
// front door refuses a larger one rather than holding it, and every copy
// a turn makes of it, in memory.
const DefaultMaxRequestBytes = 8 << 20

// RequestLimit is the most one prompt may add to a request.
func (p Profile) RequestLimit() int {
	if p.MaxRequestBytes > 0 {
		return p.MaxRequestBytes
	}
	return DefaultMaxRequestBytes
}

// Permissions is the [permissions] policy.
type Permissions struct {
	// Enabled lists the levels sessions may take; empty means all.
	Enabled []permission.Level
	// Default is a new session's level.
	Default   permission.Level
	Approvals bool
	// ToolLevels overrides the level a tool declares.
	ToolLevels map[string]permission.Level
}

// Offers reports whether l is among the enabled levels.
func (p Permissions) Offers(l permission.Level) bool {
	if len(p.Enabled) == 0 {
		return true
	}
	for _, e := range p.Enabled {
		if e == l {
			return true
		}
	}
	return false
}

// Env is what an extension or tool set is built from: one session.
type Env struct {
	SessionID string
	Meta      session.Meta
	Profile   Profile
	// DataDir is a directory private to the session (scratchpads, task
	// output).
	DataDir string
	// Level returns the session's level now.
	Level func() permission.Level
	// Project returns the project the session is on now ("" for none).
	Project func() string
	// Denied reports whether the [tools] filters remove a tool; a plugin
	// whose tools are removed is off.
	Denied func(name string) bool
	// Tasks reports on the session's background tasks, and TaskRegistry
	// starts them; both nil when the session has no data directory.
	Tasks        TaskLookup
	TaskRegistry *task.Registry
	// Files is what the session's file tools read and write through: the
	// local disk, or a front door's Files once one attaches (SetFiles).
	Files fstool.FS
	// ReadableDirs are directories every session may read beyond its
	// workspace (Options.ReadableDirs).
	ReadableDirs []string
	// Depth is how many sub-agents deep the session is, 0 for a top-level
	// one.
	Depth int
	// Session is the session being built, for plugins that act on it once
	// it is open (sub-agents spawn children of it); it must not be used
	// before its first turn.
	Session *Session
}

// TaskLookup tells an extension about a session's background tasks.
type TaskLookup interface {
	// TaskState reports whether the task exists and whether its report
	// has been delivered to the session.
	TaskState(id string) (exists, reported bool)
}

// Extension is what a plugin adds to one session's engine.
type Extension = agent.Extension

// ExtensionFunc builds an extension for a session.
type ExtensionFunc func(env Env) (Extension, error)

// Options configure a Host.
type Options struct {
	Store session.Store
	// Confinement says what confines shell commands here, for /status
	// (sandbox.Describe); nil or empty says nothing. It is a function so
	// that the probe behind it runs when first needed, not before a
	// front door's first answer.
	Confinement func() string
	// Holder identifies this process in session locks.
	Holder session.Holder
	// Profiles resolves a profile by name; "" means the default.
	Profiles func(name string) (Profile, error)
	// Tools builds the built-in tools of a session.
	Tools      func(env Env) ([]tool.Tool, error)
	Extensions []ExtensionFunc
	// Hooks lists a session's hooks for /hooks, as the composition root
	// read them when the session opened; nil lists none.
	Hooks func(sessionID string) []HookInfo
	// Observers are told the events of every session the host opens, from
	// before its first turn: each returns the session's subscriber
	// (telemetry, for one).
	Observers []func(*Session) func(agent.Event)
	// Deny removes tools matching these globs from every request.
	Deny        []string
	Permissions Permissions
	// DataDir holds per-session scratch directories.
	DataDir string
	// Home is the user's home directory: like /, it is refused as the
	// workspace of a session at the workspace level (ErrWideWorkspace)
	// unless WorkspaceHome is set (--workspace-home).
	Home          string
	WorkspaceHome bool
	// Limits for every engine; zero values mean the engine's defaults.
	MaxTurns, MaxToolCalls int
	// System, when set, replaces the built-in system prompt's preamble.
	System string
	// AdditionalDirs are added to every session's workspace, beside the
	// directories the session records; they are not persisted. Env.Meta
	// carries them in AdditionalDirs.
	AdditionalDirs []string
	// ReadableDirs are directories every session may read beyond its
	// workspace.
	ReadableDirs []string
	// Projects lists the projects' names, sorted; nil means there are
	// none, so a session can only be on no project.
	Projects func(ctx context.Context) ([]string, error)
	// Memories renders the memories of a project ("" for the user's own),
	// as /memories shows them; nil when none are kept.
	Memories func(ctx context.Context, project string) (string, error)
	// Prompt says where system prompts find instructions and skills.
	Prompt PromptOptions
	// Definitions resolves a named sub-agent definition for a session in
	// cwd; nil knows none.
	Definitions func(cwd, name string) (Definition, error)
	// MCP, when set, offers its servers' tools to every session; the
	// caller starts and closes it.
	MCP *mcp.Manager
	// ToolSearch ("auto", "always", "never"; "" is auto) and
	// ToolSearchBudget (schema bytes; 0 is 10 KB) decide when the MCP
	// tools are found through tool_search rather than sent whole.
	ToolSearch       string
	ToolSearchBudget int
	// Checkpoints, when set, record what every turn changes in the
	// workspace, so that a rewind can put the files back.
	Checkpoints *CheckpointOptions
	// Worktrees, when set, is where sub-agents spawned with isolation
	// "worktree" get their git worktree; nil refuses such a spawn.
	Worktrees *worktree.Options
	Now       func() time.Time
	Logger    *slog.Logger
}

// Host holds the sessions this process has open.
type Host struct {
	opts Options

	mu      sync.Mutex // guards open, opening, reload, onOpen, and opts.AdditionalDirs and opts.ReadableDirs
	open    map[string]*Session
	opening map[string]chan struct{} // closed when the opening ends
	reload  map[string]bool          // sessions whose next load builds a fresh prompt
	onOpen  func(*Session)

	plans planCache // plans folded from the logs of sessions not open here
	// admission decides creations from opts' policy and profiles.
	admission Admission
}

// New returns a host. It starts nothing.
func New(opts Options) (*Host, error) {
	if opts.Store == nil {
		return nil, errors.New("new host: no store")
	}
	if opts.Profiles == nil {
		return nil, errors.New("new host: no profiles")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Holder.PID == 0 {
		opts.Holder.PID = os.Getpid()
	}
	if opts.Holder.Host == "" {
		opts.Holder.Host, _ = os.Hostname()
	}
	h := &Host{opts: opts, open: make(map[string]*Session), opening: make(map[string]chan struct{}), reload: make(map[string]bool)}
	h.admission = Admission{Permissions: opts.Permissions, Home: opts.Home, WorkspaceHome: opts.WorkspaceHome,
		Profile: func(name string) (string, error) {
			p, err := opts.Profiles(name)
			return p.Name, err
		}}
	return h, nil
}

// AddRoots adds directories to the workspace of every session opened from
// now on (workspace) and to what they may read (readable). The
// directories must exist; they are recorded canonically.
func (h *Host) AddRoots(workspace, readable []string) error {
	var ws, rs []string
	for _, d := range workspace {
		c, err := Canonical(d)
		if err != nil {
			return fmt.Errorf("add workspace directory: %w", err)
		}
		ws = append(ws, c)
	}
	for _, d := range readable {
		c, err := Canonical(d)
		if err != nil {
			return fmt.Errorf("add readable directory: %w", err)
		}
		rs = append(rs, c)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opts.AdditionalDirs = append(h.opts.AdditionalDirs, ws...)
	h.opts.ReadableDirs = append(h.opts.ReadableDirs, rs...)
	return nil
}

// roots returns the host-wide additional and readable directories.
func (h *Host) roots() (workspace, readable []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.opts.AdditionalDirs), slices.Clone(h.opts.ReadableDirs)
}

// Store returns the host's session store, for listings.
func (h *Host) Store() session.Store { return h.opts.Store }

// CreateOptions describe a new session.
type CreateOptions struct {
	// ID names the new session; empty means the store picks one. A front
	// door that announced the session before it existed (--oneshot
	// --json's first line) passes the id it announced.
	ID             string
	Cwd            string
	AdditionalDirs []string
	Profile        string
	Project        string
	// Permission is the starting level; nil means the policy's default.
	Permission *permission.Level
	ParentID   string
	// SystemPrompt is a front door's client's addition to the system
	// prompt, appended to meka's own and recorded with it.
	SystemPrompt string
}

// ErrLevelNotEnabled is returned for a level [permissions] does not offer.
var ErrLevelNotEnabled = errors.New("permission level is not enabled")

// Create stores a new session and opens it.
func (h *Host) Create(ctx context.Context, o CreateOptions) (*Session, error) {
	a, err := h.admission.Admit(o)
	if err != nil {
		return nil, err
	}
	if err := h.store(ctx, a); err != nil {
		return nil, err
	}
	return h.OpenIn(ctx, a.meta.ID, a.ws)
}

// store stores an admitted session, once its project is known to exist.
func (h *Host) store(ctx context.Context, a *Admitted) error {
	if err := h.checkProject(ctx, a.meta.Project); err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	meta, err := h.opts.Store.Create(ctx, a.meta)
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	a.meta = meta
	return nil
}

// Pending is a session Start created: its row is stored and its lock
// held, while its engine (tools, prompt, extensions) is built.
type Pending struct {
	meta session.Meta
	done chan struct{}
	s    *Session // set before done closes, as is err
	err  error
}

// Meta is the session's description as it was stored.
func (p *Pending) Meta() session.Meta { return p.meta }

// Wait returns the built session, or why it could not be built; ctx
// bounds only the wait, not the build.
func (p *Pending) Wait(ctx context.Context) (*Session, error) {
	select {
	case <-p.done:
		return p.s, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Start is Create for a session admitted already (Admission.Admit,
// perhaps before the host was open, so that a front door could answer
// the creation first): it returns once the session is stored and its
// lock taken, its engine being built in the background (Pending.Wait).
// Meanwhile an Open of the session waits for the build; a failed build
// releases the lock and leaves the session stored, as a failed Create
// does.
func (h *Host) Start(ctx context.Context, a *Admitted) (*Pending, error) {
	if err := h.store(ctx, a); err != nil {
		return nil, err
	}
	p := &Pending{meta: a.meta, done: make(chan struct{})}
	s, op, err := h.begin(ctx, a.meta, a.ws)
	if err != nil {
		return nil, err
	}
	if s != nil { // opened already, by whoever found it first
		p.s = s
		close(p.done)
		return p, nil
	}
	go func() {
		defer close(p.done)
		// Not the caller's context: the build outlives its call.
		p.s, p.err = h.finishOpen(context.WithoutCancel(ctx), op)
	}()
	return p, nil
}

// Workspace is where a front door wants a session to work: a non-empty Cwd
// replaces the recorded one, and AdditionalDirs then replace (not merge)
// the recorded directories. Both are canonical.
type Workspace struct {
	Cwd            string
	AdditionalDirs []string
	// SystemPrompt, when set, replaces the client's addition to the
	// system prompt the session recorded ("" removes it); nil keeps it.
	SystemPrompt *string
}

// holds reports whether a session described by m, with the client's
// addition added, already works in ws.
func (ws Workspace) holds(m session.Meta, added string) bool {
	if ws.SystemPrompt != nil && *ws.SystemPrompt != added {
		return false
	}
	return ws.dirsHeld(m)
}

// dirsHeld reports whether m already records ws's directories.
func (ws Workspace) dirsHeld(m session.Meta) bool {
	return ws.Cwd == "" || (m.Cwd == ws.Cwd && slices.Equal(m.AdditionalDirs, ws.AdditionalDirs))
}

// Open takes a session for writing and loads it: its lock, its rows, its
// engine. A session this host already has open is returned as it is.
func (h *Host) Open(ctx context.Context, idOrPrefix string) (*Session, error) {
	return h.OpenIn(ctx, idOrPrefix, Workspace{})
}

// OpenIn is Open that, once the session's lock is taken, records ws as
// its workspace before loading it, so that the engine is built once and a
// session that could not be opened keeps its recorded workspace. A
// session already open here in another workspace is reloaded in ws.
func (h *Host) OpenIn(ctx context.Context, idOrPrefix string, ws Workspace) (*Session, error) {
	meta, err := h.opts.Store.Get(ctx, idOrPrefix)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	if ws.Cwd != "" {
		if err := h.checkWorkspace(ws.Cwd, h.recordedLevel(meta.Permission)); err != nil {
			return nil, fmt.Errorf("open session %s: %w", meta.ID, err)
		}
	}
	s, op, err := h.begin(ctx, meta, ws)
	if err != nil || s != nil {
		return s, err
	}
	return h.finishOpen(ctx, op)
}

// opening is a session being opened here: its place in h.opening, and
// its lock once taken.
type opening struct {
	meta session.Meta
	ws   Workspace
	lock session.Lock
	done chan struct{}
}

// begin takes a session for opening in ws: it returns the session when
// this host already has it open there, else its opening, with the lock
// taken and the workspace recorded, for finishOpen.
func (h *Host) begin(ctx context.Context, meta session.Meta, ws Workspace) (*Session, *opening, error) {
	// One opening per session at a time: a second caller waits for the
	// first and shares its session rather than racing it for the lock.
	for {
		h.mu.Lock()
		if s, ok := h.open[meta.ID]; ok {
			h.mu.Unlock()
			if ws.holds(s.Meta(), s.prompt.client) {
				return s, nil, nil
			}
			if s.Busy() {
				return nil, nil, fmt.Errorf("open session %s in another workspace: %w", meta.ID, agent.ErrBusy)
			}
			if err := h.CloseSession(ctx, meta.ID); err != nil {
				return nil, nil, fmt.Errorf("open session: %w", err)
			}
			continue
		}
		wait, busy := h.opening[meta.ID]
		if !busy {
			break // h.mu is held
		}
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("open session: %w", ctx.Err())
		}
	}
	op := &opening{meta: meta, ws: ws, done: make(chan struct{})}
	h.opening[meta.ID] = op.done
	h.mu.Unlock()

	lock, err := h.opts.Store.Lock(ctx, meta.ID, h.opts.Holder)
	if err != nil {
		h.endOpening(op)
		return nil, nil, fmt.Errorf("open session: %w", err)
	}
	op.lock = lock
	if !ws.dirsHeld(meta) {
		op.meta.Cwd, op.meta.AdditionalDirs = ws.Cwd, ws.AdditionalDirs
		if err := h.opts.Store.Update(ctx, op.meta); err != nil {
			_ = lock.Release(context.WithoutCancel(ctx))
			h.endOpening(op)
			return nil, nil, fmt.Errorf("open session %s: record its workspace: %w", meta.ID, err)
		}
	}
	return nil, op, nil
}

// endOpening lets the next opening of the session go ahead.
func (h *Host) endOpening(op *opening) {
	h.mu.Lock()
	delete(h.opening, op.meta.ID)
	h.mu.Unlock()
	close(op.done)
}

// finishOpen loads a session begin took, releasing its lock if it cannot.
func (h *Host) finishOpen(ctx context.Context, op *opening) (*Session, error) {
	defer h.endOpening(op)
	meta := op.meta
	s, err := h.load(ctx, meta, op.lock, op.ws.SystemPrompt)
	if err != nil {
		_ = op.lock.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open session %s: %w", meta.ID, err)
	}
	for _, o := range h.opts.Observers {
		s.Subscribe(o(s))
	}
	h.mu.Lock()
	h.open[meta.ID] = s
	onOpen := h.onOpen
	h.mu.Unlock()
	if onOpen != nil {
		onOpen(s)
	}
	return s, nil
}

// OnOpen sets a function told of every session this host opens (created,
// opened, forked), before Open returns it and so before any turn of it: a
// front door that serves every session the process holds, such as meka
// serve's feed, attaches there whoever opened the session (a scheduled
// job's firer included). nil stops it.
func (h *Host) OnOpen(fn func(*Session)) {
	h.mu.Lock()
	h.onOpen = fn
	h.mu.Unlock()
}

// Latest opens the most recently used session in cwd.
func (h *Host) Latest(ctx context.Context, cwd string) (*Session, error) {
	c, err := Canonical(cwd)
	if err != nil {
		return nil, err
	}
	meta, err := h.opts.Store.Latest(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("latest session in %s: %w", c, err)
	}
	return h.Open(ctx, meta.ID)
}

// Fork copies a session (through a turn, or whole when throughTurn < 0)
// into a new one and opens it. Background tasks do not travel.
func (h *Host) Fork(ctx context.Context, idOrPrefix string, throughTurn int64) (*Session, error) {
	return h.ForkIn(ctx, idOrPrefix, throughTurn, Workspace{})
}

// ForkIn is Fork with the fork opened in ws: a fork is a new session, so
// the workspace its request names applies to it, not the source's.
func (h *Host) ForkIn(ctx context.Context, idOrPrefix string, throughTurn int64, ws Workspace) (*Session, error) {
	meta, err := h.opts.Store.Get(ctx, idOrPrefix)
	if err != nil {
		return nil, fmt.Errorf("fork session: %w", err)
	}
	if meta.ParentID != "" {
		return nil, fmt.Errorf("fork session %s: %w", meta.ID, ErrSubAgent)
	}
	cwd := meta.Cwd
	if ws.Cwd != "" {
		cwd = ws.Cwd
	}
	if err := h.checkWorkspace(cwd, h.recordedLevel(meta.Permission)); err != nil {
		return nil, fmt.Errorf("fork session %s: %w", meta.ID, err)
	}
	forked, err := h.opts.Store.Fork(ctx, meta.ID, throughTurn)
	if err != nil {
		return nil, fmt.Errorf("fork session: %w", err)
	}
	forked.Title = session.ForkTitle(meta.ID, meta.Title, throughTurn)
	if err := h.opts.Store.Update(ctx, forked); err != nil {
		return nil, fmt.Errorf("fork session: %w", err)
	}
	return h.OpenIn(ctx, forked.ID, ws)
}

// Reopen closes an open session (after its turn) and opens it again, so
// that a changed profile or directory in its stored description applies.
// A session this host does not have open is just opened.
func (h *Host) Reopen(ctx context.Context, id string) (*Session, error) {
	if err := h.CloseSession(ctx, id); err != nil {
		return nil, fmt.Errorf("reopen session: %w", err)
	}
	return h.Open(ctx, id)
}

// ErrSessionHeld is returned for a session that cannot be deleted
// because it is open: here, or in another process (then the error also
// matches session.ErrHeld).
var ErrSessionHeld = errors.New("session is open")

// Delete removes a stored session nobody holds: its row, its log, its
// sub-agents' sessions and its private directory. It takes the session's
// lock first, so a session another process has open is refused, as is one
// open here; a session that does not exist matches session.ErrNotFound.
func (h *Host) Delete(ctx context.Context, id string) error {
	meta, err := h.opts.Store.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	h.mu.Lock()
	_, open := h.open[meta.ID]
	_, opening := h.opening[meta.ID]
	h.mu.Unlock()
	if open || opening {
		return fmt.Errorf("delete session %s: %w here; close it first", meta.ID, ErrSessionHeld)
	}
	lock, err := h.opts.Store.Lock(ctx, meta.ID, h.opts.Holder)
	if err != nil {
		if errors.Is(err, session.ErrHeld) {
			return fmt.Errorf("delete session %s: %w: %w", meta.ID, ErrSessionHeld, err)
		}
		return fmt.Errorf("delete session %s: %w", meta.ID, err)
	}
	// The store drops the lock with the row; releasing it after is moot.
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	// The session and its sub-agents at every depth, whose rows the store
	// deletes with it, each have a directory.
	dirs := []string{meta.ID}
	for i := 0; i < len(dirs); i++ {
		for cursor := ""; ; {
			page, err := h.opts.Store.List(ctx, session.ListOptions{Parent: dirs[i], Cursor: cursor, Limit: 200})
			if err != nil {
				return fmt.Errorf("delete session %s: list its sub-agents: %w", meta.ID, err)
			}
			for _, c := range page.Sessions {
				dirs = append(dirs, c.ID)
			}
			if cursor = page.Next; cursor == "" {
				break
			}
		}
	}
	if err := h.opts.Store.Delete(ctx, meta.ID); err != nil {
		return fmt.Errorf("delete session %s: %w", meta.ID, err)
	}
	if h.opts.DataDir == "" {
		return nil
	}
	var errs []error
	for _, id := range dirs {
		errs = append(errs, os.RemoveAll(filepath.Join(h.opts.DataDir, "sessions", id)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete session %s: its directory: %w", meta.ID, err)
	}
	return nil
}

// Get returns an open session.
func (h *Host) Get(id string) (*Session, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.open[id]
	return s, ok
}

// HeldElsewhere says which of ids another process holds (a REPL, a
// one-shot meka, a host sharing the database) and who: the store's
// holders, less what this host has open or is opening.
func (h *Host) HeldElsewhere(ctx context.Context, ids []string) (map[string]session.Holder, error) {
	holders, err := h.opts.Store.Holders(ctx, ids)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, hd := range holders {
		_, open := h.open[id]
		_, opening := h.opening[id]
		if open || opening || (hd.PID == h.opts.Holder.PID && hd.Host == h.opts.Holder.Host) {
			delete(holders, id)
		}
	}
	return holders, nil
}

// Sessions returns the open sessions.
func (h *Host) Sessions() []*Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Session, 0, len(h.open))
	for _, s := range h.open {
		out = append(out, s)
	}
	return out
}

// CloseSession cancels a session's turn, waits for it, and releases the
// session.
func (h *Host) CloseSession(ctx context.Context, id string) error {
	h.mu.Lock()
	s, ok := h.open[id]
	delete(h.open, id)
	h.mu.Unlock()
	if !ok {
		return nil
	}
	// The turn first (its children's are canceled with it), then the
	// children, which route through the parent until they close.
	err := s.close(ctx)
	return errors.Join(err, h.closeChildren(ctx, id))
}

// SweepIdle closes the open sessions that no turn runs in and that were
// last used longer than idle ago, and returns their ids. A swept session
// is only released: the next Open takes it up again from its rows.
func (h *Host) SweepIdle(ctx context.Context, idle time.Duration) []string {
	cutoff := h.opts.Now().Add(-idle)
	var swept []string
	for _, s := range h.Sessions() {
		if s.Busy() || !s.LastUsed().Before(cutoff) {
			continue
		}
		h.mu.Lock()
		if h.open[s.id] != s || s.Busy() || !s.LastUsed().Before(cutoff) {
			h.mu.Unlock()
			continue
		}
		delete(h.open, s.id)
		h.mu.Unlock()
		if err := errors.Join(s.close(ctx), h.closeChildren(ctx, s.id)); err != nil {
			h.opts.Logger.Warn("release idle session", "session_id", s.id, "err", err)
		}
		swept = append(swept, s.id)
	}
	return swept
}

// Close closes every open session.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	for _, s := range h.Sessions() {
		errs = append(errs, h.CloseSession(ctx, s.ID()))
	}
	return errors.Join(errs...)
}

// Canonical returns the absolute, symlink-resolved form of an existing
// directory.
func Canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return real, nil
}
