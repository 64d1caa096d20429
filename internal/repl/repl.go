// Package repl is the screen: `meka` in a terminal. It renders a host
// session's typed events inline (finished items printed once into the
// terminal's own scrollback, a bounded live region redrawn below them),
// takes prompts, steers, interrupts, approvals and local slash commands,
// and hands back anything typed that a turn did not take. When stdin or
// stdout is not a terminal it is a plain line loop instead.
//
// It is a front door: session lifecycle, approvals routing and scheduling
// belong to internal/host and internal/schedule; nothing below this
// package imports a terminal library.
package repl

import (
	"context"
	"errors"
	"io"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// Session is the one session the screen holds. Hosted adapts a host
// session; tests use fakes. Methods are called from the screen's goroutine
// except Subscribe's callback and Ask, which the turn's goroutine calls.
type Session interface {
	ID() string
	Meta() session.Meta
	ProfileName() string
	ContextWindow() int
	Level() permission.Level
	SetLevel(ctx context.Context, l permission.Level) error
	Subscribe(fn func(agent.Event)) (unsubscribe func())
	SetAsker(a permission.Asker)
	// Run runs a turn; it returns agent.ErrBusy when another turn (a
	// scheduled job, a task report) holds the session.
	Run(ctx context.Context, msg session.UserMessage) (agent.Result, error)
	Steer(parts ...model.Part) bool
	Cancel()
	Rows() []session.Row
	// Status is the /status block (host.Session.Status).
	Status() string
	// CompactFocus summarizes older turns now, keeping focus in
	// particular (/compact focus).
	CompactFocus(ctx context.Context, focus string) error
	// Withdraw takes the last turn out of the log (/rewind).
	Withdraw(ctx context.Context, turn int64) error
	// RewindFiles puts the files back as after turn keep, and TurnFiles
	// lists what each turn changed (host.Session's, from checkpoints).
	RewindFiles(ctx context.Context, keep int64, force bool) (host.RewindResult, error)
	TurnFiles(ctx context.Context) ([]host.TurnChanges, error)
	// Update changes the stored description; Reopen loads the session
	// again so that a changed profile or directory applies.
	Update(ctx context.Context, edit func(m *session.Meta)) error
	Reopen(ctx context.Context) (Session, error)
	// Fork copies the session into a new one and opens it.
	Fork(ctx context.Context) (Session, error)
}

// Schedules is what /schedule needs of the scheduler.
type Schedules interface {
	Jobs(ctx context.Context, sessionID string) ([]schedule.Job, error)
	NotFiring(j schedule.Job, level permission.Level) string
	Cancel(ctx context.Context, sessionID, idPrefix string) (string, error)
}

// MCP is what the screen asks of the host about MCP servers: /mcp's
// report and the servers' prompts, which run as slash commands.
// *host.Host satisfies it.
type MCP interface {
	MCPReport() string
	MCPPrompts() []host.MCPPrompt
	RenderMCPPrompt(ctx context.Context, name, input string) (string, error)
}

var _ MCP = (*host.Host)(nil)

// skillLister is what a Session offers when skills can be invoked as
// /name: their names, for completion and /help. The host expands an
// invocation itself, so the screen sends "/name words" as typed.
type skillLister interface{ SkillNames() []string }

// Options configure the screen.
type Options struct {
	In       io.Reader
	Out, Err io.Writer
	Width    int // 0: the terminal's; tests set both
	Height   int
	Color    bool
	// Environ is the terminal's environment (TERM and the like), which
	// only the composition root reads; nil means none.
	Environ []string
	Plain   bool // line mode: not a terminal, TERM=dumb, ACCESSIBLE
	// Ask lets line mode put approvals to the person typing (stdin is a
	// terminal); otherwise a call above the level is denied with a notice.
	Ask         bool
	Levels      []permission.Level
	Schedules   Schedules
	MCP         MCP // nil: no MCP servers
	Now         func() time.Time
	FirstPrompt string
	// NewSession creates the session /clear starts (with its first
	// message, like Unopened); nil: /clear is refused.
	NewSession Opener
	// History is how many of the newest rows `meka -c` and `-r` print
	// before the prompt; 0 prints none.
	History int
	// MaxLine bounds a line of input in line mode (default 16 MiB).
	MaxLine int
	// Ready, when set, is called once the first frame is on the screen
	// (the benchmark's time to first frame).
	Ready func()
}

// Run holds s on the terminal until the user quits. It returns the
// session held last (a /fork or /cd may change it), so the caller can
// release it and print how to resume.
func Run(ctx context.Context, s Session, opts Options) (Session, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Plain {
		return runPlain(ctx, s, opts)
	}
	return runScreen(ctx, s, opts)
}

// Hosted adapts a session h holds open.
func Hosted(h *host.Host, s *host.Session) Session { return &hosted{h: h, Session: s} }

type hosted struct {
	h *host.Host
	*host.Session
}

func (s *hosted) ProfileName() string   { return s.Profile().Name }
func (s *hosted) ContextWindow() int    { return s.Profile().ContextWindow }
func (s *hosted) Rows() []session.Row   { return s.Engine().Rows() }
func (s *hosted) Unwrap() *host.Session { return s.Session }

func (s *hosted) SkillNames() []string {
	var names []string
	for _, sk := range s.Skills() {
		names = append(names, sk.Name)
	}
	return names
}

func (s *hosted) Reopen(ctx context.Context) (Session, error) {
	n, err := s.h.Reopen(ctx, s.ID())
	if err != nil {
		return nil, err
	}
	return &hosted{h: s.h, Session: n}, nil
}

// Reload builds the session's system prompt again (AGENTS.md, skills,
// the environment) and reopens it, as ACP's /reload does.
func (s *hosted) Reload(ctx context.Context) (Session, error) {
	n, err := s.h.Reload(ctx, s.ID())
	if err != nil {
		return nil, err
	}
	return &hosted{h: s.h, Session: n}, nil
}

// Close lets the host release the session (its lock), as /clear leaves it.
func (s *hosted) Close(ctx context.Context) error { return s.h.CloseSession(ctx, s.ID()) }

func (s *hosted) Fork(ctx context.Context) (Session, error) {
	n, err := s.h.Fork(ctx, s.ID(), -1)
	if err != nil {
		return nil, err
	}
	// The screen holds one session: the source is released.
	if err := s.h.CloseSession(ctx, s.ID()); err != nil {
		return nil, err
	}
	return &hosted{h: s.h, Session: n}, nil
}

// Unwrap returns the host session behind a Session made by Hosted.
func Unwrap(s Session) (*host.Session, bool) {
	h, ok := s.(*hosted)
	if !ok {
		return nil, false
	}
	return h.Session, true
}

// ErrLineTooLong is line mode's answer to an input line over
// Options.MaxLine; the lines before it were sent.
var ErrLineTooLong = errors.New("input line too long")

// errNoSession answers what needs a session before the first message made
// one.
var errNoSession = errors.New("no session yet: it starts with your first message")

// Opener creates the session a first message starts, at the level chosen
// before it.
type Opener func(ctx context.Context, level permission.Level) (Session, error)

// Unopened is a session that does not exist yet: the screen shows it and
// creates it (open) when the first message is sent, so quitting before
// that leaves nothing behind. A level chosen meanwhile is the new
// session's.
func Unopened(profile string, level permission.Level, open Opener) Session {
	return &unopened{profile: profile, level: level, open: open}
}

type unopened struct {
	profile string
	level   permission.Level
	open    Opener
}

func (u *unopened) ID() string                         { return "" }
func (u *unopened) Meta() session.Meta                 { return session.Meta{} }
func (u *unopened) ProfileName() string                { return u.profile }
func (u *unopened) ContextWindow() int                 { return 0 }
func (u *unopened) Level() permission.Level            { return u.level }
func (u *unopened) Subscribe(func(agent.Event)) func() { return func() {} }
func (u *unopened) SetAsker(permission.Asker)          {}
func (u *unopened) Steer(...model.Part) bool           { return false }
func (u *unopened) Cancel()                            {}
func (u *unopened) Rows() []session.Row                { return nil }
func (u *unopened) Status() string {
	return "Permission: " + u.level.String() + "\nProfile: " + u.profile + "\nNo session yet: it starts with your first message."
}
func (u *unopened) CompactFocus(context.Context, string) error { return errNoSession }
func (u *unopened) Withdraw(context.Context, int64) error      { return errNoSession }
func (u *unopened) RewindFiles(context.Context, int64, bool) (host.RewindResult, error) {
	return host.RewindResult{}, errNoSession
}
func (u *unopened) TurnFiles(context.Context) ([]host.TurnChanges, error) { return nil, errNoSession }
func (u *unopened) Update(context.Context, func(*session.Meta)) error     { return errNoSession }
func (u *unopened) Reopen(context.Context) (Session, error)               { return nil, errNoSession }
func (u *unopened) Fork(context.Context) (Session, error)                 { return nil, errNoSession }

func (u *unopened) SetLevel(_ context.Context, l permission.Level) error {
	u.level = l
	return nil
}

func (u *unopened) Run(context.Context, session.UserMessage) (agent.Result, error) {
	return agent.Result{}, errNoSession
}

// create makes the session if s is unopened; it returns s otherwise.
func create(ctx context.Context, s Session) (Session, error) {
	u, ok := s.(*unopened)
	if !ok {
		return s, nil
	}
	return u.open(ctx, u.level)
}
