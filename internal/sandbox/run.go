package sandbox

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Running is a command started by Start, its output being copied.
type Running struct {
	cmd     *exec.Cmd
	readers []*os.File
	copiers sync.WaitGroup // one per reader
	tracked *Tracked       // nil unless started by StartTracked
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
	r := &Running{cmd: cmd}
	var writers []*os.File
	closeAll := func() {
		for _, f := range append(writers, r.readers...) {
			f.Close()
		}
	}
	pipe := func() (*os.File, error) {
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		r.readers = append(r.readers, pr)
		writers = append(writers, pw)
		return pw, nil
	}
	var err error
	if cmd.Stdout, err = pipe(); err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if stderr != nil {
		if cmd.Stderr, err = pipe(); err != nil {
			closeAll()
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	for _, w := range writers {
		w.Close() // the child holds its own copies
	}
	out := []io.Writer{stdout, stderr}
	for i, pr := range r.readers {
		r.copiers.Add(1)
		go func() {
			defer r.copiers.Done()
			io.Copy(out[i], pr)
		}()
	}
	return r, nil
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

// Pid returns the process id, which is also its process group id.
func (r *Running) Pid() int { return r.cmd.Process.Pid }

// Wait waits for the command to exit, kills what it left running in its
// process group, and waits for the output to be copied: at most the
// command's WaitDelay, after which pipes a process outside the group still
// holds are closed; then it forgets StartTracked's note. It returns
// cmd.Wait's error.
func (r *Running) Wait() error {
	err := r.cmd.Wait()
	KillGroup(r.cmd)
	copied := make(chan struct{})
	go func() {
		r.copiers.Wait()
		close(copied)
	}()
	delay := r.cmd.WaitDelay
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
