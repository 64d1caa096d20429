package schedule

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// GateError is a gate that could not be evaluated: it timed out, could
// not start, its tool is unavailable, or its result could not be read.
// Such an occurrence is declined, not judged.
type GateError struct {
	JobID string
	Err   error
}

func (e *GateError) Error() string {
	return fmt.Sprintf("gate of job %s could not be evaluated: %v", ShortID(e.JobID), e.Err)
}

func (e *GateError) Unwrap() error { return e.Err }

// gateCommand runs a command gate as the shell tool runs commands, through
// the sandbox's runner: sh -c in dir, in a process group a canceled ctx
// kills whole, with a scrubbed environment. It runs unconfined: only the
// unrestricted level authorises a command gate.
func gateCommand(scrub []string) func(ctx context.Context, dir, command string) (*exec.Cmd, error) {
	return func(ctx context.Context, dir, command string) (*exec.Cmd, error) {
		return sandbox.Command(ctx, sandbox.Spec{
			Args: []string{"sh", "-c", command}, Dir: dir,
			Env: sandbox.ScrubEnv(os.Environ(), scrub), Mode: sandbox.Unrestricted,
		})
	}
}

// capture keeps the first MaxProbeOutput bytes written to it and hashes
// all of them.
type capture struct {
	buf bytes.Buffer
	cut bool
	sum hash.Hash
}

func newCapture() *capture { return &capture{sum: sha256.New()} }

func (c *capture) Write(p []byte) (int, error) {
	c.sum.Write(p)
	if room := MaxProbeOutput - c.buf.Len(); room < len(p) {
		c.buf.Write(p[:max(room, 0)])
		c.cut = true
	} else {
		c.buf.Write(p)
	}
	return len(p), nil
}

func (c *capture) probe() probe {
	p := probe{out: c.buf.Bytes(), cut: c.cut}
	c.sum.Sum(p.sum[:0])
	return p
}

// limited keeps the first n bytes written to it.
type limited struct {
	buf bytes.Buffer
	n   int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// runCheck evaluates a gate's check once. An error is a *GateError unless
// ctx itself ended (the host is stopping), which is returned as is.
func (s *Scheduler) runCheck(ctx context.Context, j Job, g *Gate) (probe, error) {
	var (
		p   probe
		err error
	)
	if g.Check.IsCommand() {
		p, err = s.runCommand(ctx, j, g.Check.Command)
	} else {
		p, err = s.runTool(ctx, j, g.Check)
	}
	if err != nil {
		if ctx.Err() != nil {
			return probe{}, ctx.Err()
		}
		return probe{}, &GateError{JobID: j.ID, Err: err}
	}
	return p, nil
}

func (s *Scheduler) runCommand(ctx context.Context, j Job, command string) (probe, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.GateTimeout)
	defer cancel()
	cmd, err := s.opts.Command(ctx, j.Cwd, command)
	if err != nil {
		return probe{}, fmt.Errorf("prepare the command: %w", err)
	}
	out, errOut := newCapture(), &limited{n: MaxTurnOutput}
	cmd.Stdout, cmd.Stderr = out, errOut
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return probe{}, fmt.Errorf("the command timed out after %s (gate_timeout)", s.formatDuration(s.opts.GateTimeout))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return probe{}, fmt.Errorf("start the command: %w", err)
	}
	p := out.probe()
	p.stderr = errOut.buf.Bytes()
	p.exit = cmd.ProcessState.ExitCode()
	p.ok = p.exit == 0
	// sh reports a command it could not find or execute with 127 and
	// 126: the check itself is broken, which no predicate should read
	// as an answer.
	if p.exit == 126 || p.exit == 127 {
		why := "not found"
		if p.exit == 126 {
			why = "not executable"
		}
		msg := strings.TrimSpace(string(p.stderr))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if msg != "" {
			msg = ": " + msg
		}
		return probe{}, fmt.Errorf("the shell could not run the command (exit %d, %s)%s", p.exit, why, msg)
	}
	return p, nil
}

func (s *Scheduler) runTool(ctx context.Context, j Job, c Check) (probe, error) {
	t, _, ok := s.opts.Firer.Tool(j.SessionID, c.Tool)
	if !ok {
		return probe{}, fmt.Errorf("the tool %s is not available", c.Tool)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.GateTimeout)
	defer cancel()
	res, err := runTool(ctx, t, tool.Call{
		ID: "gate-" + ShortID(j.ID), Name: c.Tool, Arguments: c.Arguments,
		SessionID: j.SessionID, Cwd: j.Cwd,
		// A gate dispatches at read, the level confinement is built
		// around, whatever the session holds.
		Level: permission.Read,
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return probe{}, fmt.Errorf("the tool %s timed out after %s (gate_timeout)", c.Tool, s.formatDuration(s.opts.GateTimeout))
	}
	if err != nil {
		return probe{}, fmt.Errorf("the tool %s failed: %w", c.Tool, err)
	}
	out := newCapture()
	for _, part := range res.Content {
		if t, ok := part.(model.Text); ok {
			out.Write([]byte(t.Text))
		}
	}
	p := out.probe()
	p.ok = !res.IsError
	return p, nil
}

// runTool runs a tool, turning a panic into an error: a gate's probe must
// not take the scheduler down.
func runTool(ctx context.Context, t tool.Tool, call tool.Call) (res tool.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return t.Run(ctx, call)
}
