package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"meka.dev/meka/internal/sandbox"
)

// DefaultMaxOutput bounds what is kept of each of a hook's stdout and
// stderr; the rest is read and dropped, so a chatty hook neither blocks
// nor fills memory.
const DefaultMaxOutput = 64 << 10

// Runner runs hooks.
type Runner struct {
	// Env is the environment every hook gets (the allow-listed one the
	// composition root builds); MEKA_PROJECT_DIR and CLAUDE_PROJECT_DIR are
	// added.
	Env []string
	// ProjectDir is the session's project root, and the hooks' directory.
	ProjectDir string
	// Confinement returns the session's confinement for a confined hook
	// (Args, Dir and Env are filled in here); nil refuses confined hooks.
	Confinement func() sandbox.Spec
	// MaxOutput replaces DefaultMaxOutput.
	MaxOutput int
	// Now is the clock durations are measured by.
	Now func() time.Time
}

// Outcome is how one hook run ended.
type Outcome struct {
	Match
	// Exit is the exit status; -1 when the hook did not exit by itself
	// (killed on timeout or cancel, or never started).
	Exit           int
	Stdout, Stderr string
	// Truncated says output beyond the bound was dropped.
	Truncated bool
	TimedOut  bool
	Canceled  bool
	Duration  time.Duration
	// Err is why the hook could not be started.
	Err error
}

// RunAll runs every match at once, each with its own stdin, and returns
// their outcomes in match order. Canceling ctx kills them all.
func (r *Runner) RunAll(ctx context.Context, ms []Match, stdin func(Match) []byte) []Outcome {
	out := make([]Outcome, len(ms))
	if len(ms) == 1 {
		out[0] = r.Run(ctx, ms[0], stdin(ms[0]))
		return out
	}
	var wg sync.WaitGroup
	for i, m := range ms {
		in := stdin(m)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = r.Run(ctx, m, in)
		}()
	}
	wg.Wait()
	return out
}

// Run runs one hook with stdin, as `sh -c COMMAND` in the project
// directory.
func (r *Runner) Run(ctx context.Context, m Match, stdin []byte) Outcome {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	o := Outcome{Match: m, Exit: -1}
	start := now()
	defer func() { o.Duration = now().Sub(start) }()

	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	env := make([]string, 0, len(r.Env)+2)
	env = append(env, r.Env...)
	env = append(env, "MEKA_PROJECT_DIR="+r.ProjectDir, "CLAUDE_PROJECT_DIR="+r.ProjectDir)
	spec := sandbox.Spec{Mode: sandbox.Unrestricted, WaitDelay: time.Second}
	if m.Confine {
		if r.Confinement == nil {
			o.Err = errors.New("this session has no confinement for a confined hook")
			return o
		}
		spec = r.Confinement()
	}
	spec.Args = []string{"/bin/sh", "-c", m.Command}
	spec.Dir = r.ProjectDir
	spec.Env = env
	cmd, err := sandbox.Command(rctx, spec)
	if err != nil {
		o.Err = err
		return o
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout, stderr := &bounded{max: limit}, &bounded{max: limit}
	run, err := sandbox.Start(cmd, stdout, stderr)
	if err != nil {
		o.Err = err
		return o
	}
	werr := run.Wait()
	st, ended := run.Status()
	o.Stdout, o.Stderr = stdout.String(), stderr.String()
	o.Truncated = stdout.dropped || stderr.dropped
	switch {
	case ctx.Err() != nil:
		o.Canceled = true
	case rctx.Err() != nil:
		o.TimedOut = true
	case ended && st.Signal == 0:
		o.Exit = st.Code
	case werr != nil:
		o.Err = werr
	default:
		o.Err = fmt.Errorf("killed by signal %d", st.Signal)
	}
	return o
}

// bounded keeps the first max bytes written to it and drops the rest.
type bounded struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room < len(p) {
		if room > 0 {
			b.buf.Write(p[:room])
		}
		b.dropped = true
		return len(p), nil
	}
	b.buf.Write(p)
	return len(p), nil
}

func (b *bounded) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
