package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/oneshot"
	"meka.dev/meka/session"
)

// runOneshot runs one turn and exits: in a new session, or in the one
// --continue or --resume names (which it must be able to lock, as the
// terminal does).
func runOneshot(ctx context.Context, g *globals, prompt string, cont bool, resume string) error {
	if strings.TrimSpace(prompt) == "" {
		return usageError("--oneshot needs a prompt: meka --oneshot \"what to do\"")
	}
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	s, err := openSession(ctx, g, a, cont, resume)
	if err != nil {
		return err
	}
	code := oneshot.Run(ctx, s, prompt, oneshot.Options{Stdout: g.stdout, Stderr: g.stderr, Plan: renderPlan, Verbose: g.verbose > 0})
	if code != 0 {
		// oneshot has said why on stderr.
		return &exitError{code: code}
	}
	return nil
}

// openSession opens the session --resume names, the latest of this
// directory for --continue, or else creates one.
func openSession(ctx context.Context, g *globals, a *app, cont bool, resume string) (*host.Session, error) {
	dir, err := cwd()
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
	default:
		s, err = a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project})
	}
	if err != nil {
		return nil, &exitError{code: 1, err: err}
	}
	return s, nil
}

// runInteractive is the line-oriented terminal: each line read from stdin
// is a turn of one session (new, continued or resumed). A new session is
// created only once its first line is accepted, so input refused before
// that leaves nothing behind.
func runInteractive(ctx context.Context, g *globals, prompt string, cont bool, resume string) error {
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	// A standing terminal is a long-lived host: jobs its session set fire.
	defer a.startScheduler(ctx)()
	var s *host.Session
	open := func() error {
		if s != nil {
			return nil
		}
		if s, err = openSession(ctx, g, a, cont, resume); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "meka session %s (%s, %s). One line is one message; Ctrl+D ends.\n", s.ID(), s.Profile().Name, s.Level())
		return nil
	}
	if cont || resume != "" {
		if err := open(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(g.stderr, "meka: a new session starts with your first message. One line is one message; Ctrl+D ends.")
	}
	opts := oneshot.Options{Stdout: g.stdout, Stderr: g.stderr, Plan: renderPlan, Verbose: g.verbose > 0}
	turn := func(line string) error {
		if err := open(); err != nil {
			return err
		}
		oneshot.Run(ctx, s, line, opts)
		if ctx.Err() != nil {
			// Ended by a signal: the turn was cancelled and recorded.
			return &exitError{code: oneshot.ExitCanceled}
		}
		return nil
	}
	if strings.TrimSpace(prompt) != "" {
		if err := turn(prompt); err != nil {
			return err
		}
	}
	sc := bufio.NewScanner(g.stdin)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for {
		fmt.Fprint(g.stderr, "> ")
		if !sc.Scan() {
			fmt.Fprintln(g.stderr)
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				return usageError("a line of input is over %d MiB; attach large text as a file instead", maxLine>>20)
			}
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err := turn(line); err != nil {
			return err
		}
	}
}

// maxLine bounds one line of terminal input.
const maxLine = 16 << 20
