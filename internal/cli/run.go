package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/google/uuid"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/oneshot"
	"meka.dev/meka/internal/repl"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// runOneshot runs one turn and exits: in a new session, or in the one
// --continue or --resume names (which it must be able to lock, as the
// terminal does).
func runOneshot(ctx context.Context, g *globals, prompt string, cont bool, resume string) error {
	stream := false
	switch g.inputFormat {
	case "", "text":
	case "stream-json":
		if !g.jsonEvents {
			return usageError("--input-format stream-json needs --json")
		}
		stream = true
	default:
		return usageError("%v, not %q", errStreamFormat, g.inputFormat)
	}
	if !stream && strings.TrimSpace(prompt) == "" && !g.stdinPiped() {
		return usageError("--oneshot needs a prompt: meka --oneshot \"what to do\", or pipe it in")
	}
	// --json names a new session on its first line before anything slow
	// happens; a run that fails before its turn then ends the stream with
	// turn.failed, the reason on stderr.
	announced := ""
	if g.jsonEvents && !cont && resume == "" {
		if dir, err := g.cwd(); err == nil {
			announced = uuid.Must(uuid.NewV7()).String()
			oneshot.Announce(g.stdout, announced, dir, g.now())
		}
	}
	err := g.runOneshot(ctx, prompt, cont, resume, stream, announced)
	var ee *exitError
	if announced != "" && err != nil && !(errors.As(err, &ee) && ee.err == nil) {
		oneshot.StartFailed(g.stdout, announced, g.now())
	}
	return err
}

// runOneshot is runOneshot once the flags are checked; announced is the
// id --json named the new session with, if it did.
func (g *globals) runOneshot(ctx context.Context, prompt string, cont bool, resume string, stream bool, announced string) error {
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	a.notices.attach(a.host, g.terminalSafe(g.stderr))
	if a.mcp != nil {
		// A required server that did not start fails the run before any
		// turn; the others only cost their notice.
		if err := a.mcp.Wait(ctx); errors.Is(err, mcp.ErrRequired) {
			return &exitError{code: 1, err: err}
		}
	}
	if !stream {
		limit := 0
		if p, err := a.cfg.ResolveProfile(g.profile, g.getenv); err == nil {
			limit = p.MaxRequestBytes
		}
		if prompt, err = g.oneshotPrompt(prompt, limit); err != nil {
			return err
		}
	}
	var s *host.Session
	if announced != "" {
		dir, err := g.cwd()
		if err != nil {
			return err
		}
		if s, err = a.host.Create(ctx, host.CreateOptions{ID: announced, Cwd: dir, Profile: g.profile, Project: g.project}); err != nil {
			return &exitError{code: 1, err: err}
		}
	} else if s, err = openSession(ctx, g, a, cont, resume); err != nil {
		return err
	}
	opts := oneshot.Options{Stdout: g.terminalSafe(g.stdout), Stderr: g.terminalSafe(g.stderr), Plan: renderPlan, Verbose: g.verbose > 0,
		JSON: g.jsonEvents, Feed: a.db.feed, Relay: true, Resumed: cont || resume != "", Announced: announced != "", Now: g.now}
	if g.jsonEvents {
		opts.Stdout = g.stdout // JSON escapes what a terminal would act on
	}
	var code int
	if stream {
		code = oneshot.RunStream(ctx, s, prompt, g.stdin, opts)
	} else {
		code = oneshot.Run(ctx, s, prompt, opts)
	}
	if code != 0 {
		// oneshot has said why on stderr.
		return &exitError{code: code}
	}
	return nil
}

// openSession opens the session --resume names, the latest of this
// directory for --continue, or else creates one.
func openSession(ctx context.Context, g *globals, a *app, cont bool, resume string) (*host.Session, error) {
	dir, err := g.cwd()
	if err != nil {
		return nil, err
	}
	var s *host.Session
	switch {
	case resume != "":
		s, err = a.host.Open(ctx, resume)
	case cont:
		s, err = a.host.Latest(ctx, dir)
		if errors.Is(err, session.ErrNotFound) {
			return nil, &exitError{code: 1, err: fmt.Errorf("no session in %s; start one with meka", dir)}
		}
		if err == nil {
			// Several sessions may share a directory: say which this is.
			m := s.Meta()
			fmt.Fprintf(g.terminalSafe(g.stderr), "meka: continuing session %s, last used %s: %s\n", shortSessionID(m.ID),
				m.UpdatedAt.Local().Format(time.DateTime), cell(m.Title, 60))
		}
	default:
		s, err = a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project})
	}
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	return s, nil
}

// runInteractive is `meka` in a terminal: the screen on one session
// (new, continued or resumed), or line mode when stdin or stdout is not a
// terminal. A new session is created only once its first message is
// accepted, so quitting before that leaves nothing behind. The host runs
// the scheduler for the session it holds, so its jobs fire here. Quitting
// releases the session and says how to resume it.
func runInteractive(ctx context.Context, g *globals, prompt string, cont bool, resume string) error {
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	a.notices.attach(a.host, g.terminalSafe(g.stderr))
	// A standing terminal is a long-lived host: jobs its session set fire.
	// The scheduler stops before the host closes (defers run last first).
	defer a.startScheduler(ctx)()

	tty := g.terminal()
	opts := repl.Options{
		In: g.stdin, Out: g.stdout, Err: g.stderr,
		Color:       tty.color,
		Environ:     os.Environ(),
		Plain:       !tty.ok,
		Ask:         g.stdinIsTerminal(),
		Levels:      a.cfg.Permissions.Enabled,
		Now:         g.now,
		FirstPrompt: prompt,
		MaxLine:     maxLine,
	}
	if opts.Plain {
		// Line mode on a terminal (TERM=dumb, MEKA_PLAIN) still may not let
		// a reply drive it; to a pipe the text passes unchanged.
		opts.Out = g.terminalSafe(g.stdout)
	}
	if a.sched != nil {
		opts.Schedules = a.sched.sched
	}
	opts.MCP = a.host
	// A session the first message creates: at startup, and after /clear
	// (which keeps the directory the screen was started in).
	newSession := func(ctx context.Context, level permission.Level) (repl.Session, error) {
		dir, err := g.cwd()
		if err != nil {
			return nil, err
		}
		hs, err := a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project, Permission: &level})
		if err != nil {
			return nil, err
		}
		return repl.Hosted(a.host, hs), nil
	}
	opts.NewSession = newSession
	var s repl.Session
	if cont || resume != "" {
		hs, err := openSession(ctx, g, a, cont, resume)
		if err != nil {
			return err
		}
		s = repl.Hosted(a.host, hs)
		if opts.Plain {
			fmt.Fprintf(g.stderr, "meka session %s (%s, %s). One line is one message; end of input ends.\n", hs.ID(), hs.Profile().Name, hs.Level())
		} else {
			// Printed before the program starts: nothing may print before
			// its first frame.
			repl.History(g.stdout, hs.Engine().Rows(), historyRows, max(tty.width, 20), tty.color)
		}
	} else {
		level, err := g.fallbackLevel(a.cfg)
		if err != nil {
			return err
		}
		prof, err := a.cfg.ResolveProfile(g.profile, g.getenv)
		if err != nil {
			return usageError("%v", err)
		}
		s = repl.Unopened(prof.Name, level, newSession)
		if opts.Plain {
			fmt.Fprintln(g.stderr, "meka: a new session starts with your first message. One line is one message; end of input ends.")
		}
	}
	last, err := repl.Run(ctx, s, opts)
	if last != nil && last.ID() != "" {
		fmt.Fprintf(g.stderr, "Resume this session with: meka -r %s\n", shortSessionID(last.ID()))
	}
	switch {
	case ctx.Err() != nil:
		// Ended by a signal: a running turn was cancelled and recorded.
		// Ctrl+C is how a person quits line mode, a normal end (0), as
		// quitting the screen is; 130 is --oneshot's alone. A supervisor's
		// SIGTERM or a closed terminal's SIGHUP still says so.
		if se := (*SignalError)(nil); errors.As(context.Cause(ctx), &se) && se.Signal == syscall.SIGINT {
			return nil
		}
		return &exitError{code: oneshot.ExitCanceled}
	case errors.Is(err, repl.ErrLineTooLong):
		return usageError("a line of input is over %d MiB; attach large text as a file instead", maxLine>>20)
	case err != nil:
		return &exitError{code: 1, err: err}
	}
	return nil
}

// historyRows is how many of a reopened session's newest rows the screen
// prints before its prompt.
const historyRows = 40

// shortSessionID is enough of a session id to resume it.
func shortSessionID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// tty is what the terminal is, when stdin and stdout are one.
type tty struct {
	ok            bool
	color         bool
	width, height int
}

// terminal decides between the screen and line mode: both stdin and
// stdout must be terminals, TERM not dumb, and neither ACCESSIBLE nor
// MEKA_PLAIN set. NO_COLOR turns colour off.
func (g *globals) terminal() tty {
	in, ok1 := g.stdin.(*os.File)
	out, ok2 := g.stdout.(*os.File)
	if !ok1 || !ok2 || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return tty{}
	}
	if g.getenv("TERM") == "dumb" || g.getenv("ACCESSIBLE") != "" || g.getenv("MEKA_PLAIN") != "" {
		return tty{}
	}
	t := tty{ok: true, color: g.getenv("NO_COLOR") == ""}
	if w, h, err := term.GetSize(out.Fd()); err == nil {
		t.width, t.height = w, h
	}
	return t
}

// maxLine bounds one line of terminal input.
const maxLine = 16 << 20
