package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Running is a command started by Start or Launch, its output being
// copied.
type Running struct {
	cmd     *exec.Cmd // nil when a launcher runs it
	proc    *launched // nil when cmd runs it
	readers []*os.File
	copiers sync.WaitGroup // one per reader
	tracked *Tracked       // nil unless tracked
	delay   time.Duration
	status  Status
	ended   bool
}

// Status is how a command ended.
type Status struct {
	// Code is the exit code, -1 when a signal ended the command.
	Code int
	// Signal is the signal that ended it, 0 when it exited.
	Signal syscall.Signal
	// CPU is the user and system time the command used.
	CPU time.Duration
}

// Launch starts spec as Command would build it, tracked in dir as
// StartTracked does (an empty dir tracks nothing), with its stdout and
// stderr copied as Start copies them. A confined command whose temp dir
// MkShellTemp made (or that has none) is started by a launcher: a helper
// that confined itself once for every command confined the same way and
// starts each in a PID namespace and Landlock domain of its own, which
// spares each command the helper's start and the namespaces' creation
// (see helper.Spec.Serve). Every other command, or any a launcher cannot
// take, is started as Command builds it, with the same guarantees.
// Canceling ctx kills the command and everything it started.
func Launch(ctx context.Context, spec Spec, dir string, stdout, stderr io.Writer) (*Running, error) {
	p := hostProbe()
	c, err := p.confine(spec)
	if err != nil {
		return nil, fmt.Errorf("build command: %w", err)
	}
	if r, ok, err := p.launch(ctx, c, spec, dir, stdout, stderr); ok {
		return r, err
	}
	return StartTracked(dir, p.build(ctx, spec, c), stdout, stderr)
}

// Start starts cmd with its stdout copied to stdout and its stderr to
// stderr, or to stdout as well when stderr is nil (one pipe, so the two
// stay in the order they were written). The writers are called from
// goroutines of Running's own, concurrently when there are two. cmd's
// Stdout and Stderr must be unset.
//
// The command writes into pipes rather than files so that reopening
// /dev/stdout or /dev/stderr cannot truncate what was written, and the
// pipes are Running's so that Wait can end them (see Wait).
func Start(cmd *exec.Cmd, stdout, stderr io.Writer) (*Running, error) {
	if cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("start command: Stdout or Stderr already set")
	}
	r := &Running{cmd: cmd, delay: cmd.WaitDelay}
	writers, err := r.pipes(stderr != nil)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = writers[0], writers[len(writers)-1]
	if err := cmd.Start(); err != nil {
		r.closePipes(writers)
		return nil, err
	}
	r.copyOut(writers, stdout, stderr)
	return r, nil
}

// pipes makes the output pipes, one or two, and returns their write ends.
func (r *Running) pipes(two bool) ([]*os.File, error) {
	var writers []*os.File
	for range 1 + btoi(two) {
		pr, pw, err := os.Pipe()
		if err != nil {
			r.closePipes(writers)
			return nil, err
		}
		r.readers = append(r.readers, pr)
		writers = append(writers, pw)
	}
	return writers, nil
}

func (r *Running) closePipes(writers []*os.File) {
	for _, f := range append(writers, r.readers...) {
		f.Close()
	}
	r.readers = nil
}

// copyOut closes the write ends, which the child holds copies of, and
// copies each pipe to its writer.
func (r *Running) copyOut(writers []*os.File, stdout, stderr io.Writer) {
	for _, w := range writers {
		w.Close()
	}
	out := []io.Writer{stdout, stderr}
	for i, pr := range r.readers {
		r.copiers.Add(1)
		go func() {
			defer r.copiers.Done()
			io.Copy(out[i], pr)
		}()
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// StartTracked is Start with cmd noted in dir (Track) before it starts
// and its process group noted once it has; Wait forgets the note once the
// group is gone. An empty dir notes nothing.
func StartTracked(dir string, cmd *exec.Cmd, stdout, stderr io.Writer) (*Running, error) {
	tr := Track(dir, cmd)
	r, err := Start(cmd, stdout, stderr)
	if err != nil {
		tr.Forget()
		return nil, err
	}
	tr.Started(r.Pid())
	r.tracked = tr
	return r, nil
}

// Pid returns the process id, which is also its process group id; 0 for
// a command a launcher started, which has neither in meka's namespace.
func (r *Running) Pid() int {
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Wait waits for the command to exit, kills what it left running (its
// process group; under a launcher the end of its PID namespace does), and
// waits for the output to be copied: at most the command's WaitDelay,
// after which pipes a process outside the group still holds are closed;
// then it forgets the tracking note. How the command ended is Status's;
// Wait's error is cmd.Wait's, or a launcher's that lost the command.
func (r *Running) Wait() error {
	var err error
	if r.cmd != nil {
		err = r.cmd.Wait()
		KillGroup(r.cmd)
		if ps := r.cmd.ProcessState; ps != nil {
			r.status, r.ended = statusOf(ps), true
		}
	} else {
		r.status, err = r.proc.wait()
		r.ended = err == nil
		if err == nil && (r.status.Code != 0 || r.status.Signal != 0) {
			err = &ExitError{Status: r.status}
		}
	}
	copied := make(chan struct{})
	go func() {
		r.copiers.Wait()
		close(copied)
	}()
	delay := r.delay
	if delay <= 0 {
		delay = DefaultWaitDelay
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-copied:
	case <-t.C:
		for _, pr := range r.readers {
			pr.Close()
		}
		<-copied
	}
	for _, pr := range r.readers {
		pr.Close()
	}
	if r.tracked != nil {
		r.tracked.Forget()
	}
	return err
}

// Status reports how the command ended, once Wait has returned; ok is
// false when that is not known (it never ended normally, or Wait lost it).
func (r *Running) Status() (st Status, ok bool) { return r.status, r.ended }

// ExitError is Wait's error for a command a launcher ran that did not
// exit with 0.
type ExitError struct{ Status Status }

func (e *ExitError) Error() string {
	if e.Status.Signal != 0 {
		return "signal: " + e.Status.Signal.String()
	}
	return fmt.Sprintf("exit status %d", e.Status.Code)
}

func statusOf(ps *os.ProcessState) Status {
	st := Status{Code: ps.ExitCode(), CPU: ps.UserTime() + ps.SystemTime()}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		st.Signal = ws.Signal()
	}
	return st
}

var errLauncherGone = errors.New("the launcher running the command ended")
