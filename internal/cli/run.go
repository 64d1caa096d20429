package cli

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/oneshot"
)

func runOneshot(ctx context.Context, g *globals, prompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return usageError("--oneshot needs a prompt: meka --oneshot \"what to do\"")
	}
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	dir, err := cwd()
	if err != nil {
		return err
	}
	s, err := a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project})
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	code := oneshot.Run(ctx, s, prompt, oneshot.Options{Stdout: g.stdout, Stderr: g.stderr, Plan: renderPlan, Verbose: g.verbose > 0})
	if code != 0 {
		// oneshot has said why on stderr.
		return &exitError{code: code}
	}
	return nil
}

// runInteractive is the line-oriented terminal: each line read from stdin
// is a turn of one session (new, continued or resumed).
func runInteractive(ctx context.Context, g *globals, prompt string, cont bool, resume string) error {
	a, err := g.newApp(ctx)
	if err != nil {
		return err
	}
	defer a.close(context.WithoutCancel(ctx))
	// A standing terminal is a long-lived host: jobs its session set fire.
	defer a.startScheduler(ctx)()
	dir, err := cwd()
	if err != nil {
		return err
	}
	var s *host.Session
	switch {
	case resume != "":
		s, err = a.host.Open(ctx, resume)
	case cont:
		s, err = a.host.Latest(ctx, dir)
	default:
		s, err = a.host.Create(ctx, host.CreateOptions{Cwd: dir, Profile: g.profile, Project: g.project})
	}
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(g.stderr, "meka session %s (%s, %s). One line is one message; Ctrl+D ends.\n", s.ID(), s.Profile().Name, s.Level())
	opts := oneshot.Options{Stdout: g.stdout, Stderr: g.stderr, Plan: renderPlan, Verbose: g.verbose > 0}
	if strings.TrimSpace(prompt) != "" {
		oneshot.Run(ctx, s, prompt, opts)
	}
	sc := bufio.NewScanner(g.stdin)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for {
		fmt.Fprint(g.stderr, "> ")
		if !sc.Scan() {
			fmt.Fprintln(g.stderr)
			return sc.Err()
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		oneshot.Run(ctx, s, line, opts)
		if ctx.Err() != nil {
			return nil
		}
	}
}
