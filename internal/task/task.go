// Package task owns a session's background tasks: commands started to run
// on after the tool call that started them returns, each confined as
// internal/sandbox confines it, with its output in a file, its outcome
// recorded when it ends, and the report the model reads about it.
//
// Tasks belong to the process of their session and do not travel to
// forks. The registry tells a task that has ended but whose report has not
// been delivered (Exited and not Reported) from one that has reported.
//
// It imports internal/sandbox only.
package task

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"meka.dev/meka/internal/sandbox"
)

// State is where a task is in its life.
type State string

const (
	// Running tasks have not ended.
	Running State = "running"
	// Exited tasks ended on their own with an exit code, zero or not.
	Exited State = "exited"
	// Failed tasks were ended by a signal nobody in meka sent, or could
	// not be waited for.
	Failed State = "failed"
	// Killed tasks were stopped by Kill, their timeout, or Close.
	Killed State = "killed"
)

// Errors the registry returns.
var (
	ErrClosed     = errors.New("task registry closed")
	ErrUnknown    = errors.New("unknown task")
	ErrNotRunning = errors.New("task is not running")
)

// Causes of a kill, told apart when the task ends.
var (
	errKilled  = errors.New("killed on request")
	errClosed  = errors.New("killed because its session closed")
	errTimeout = errors.New("timed out")
)

// Task is a snapshot of one background task.
type Task struct {
	ID      string    `json:"id"`
	Label   string    `json:"label"`
	Command string    `json:"command"`
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	State   State     `json:"state"`
	// ExitCode is the code an Exited task exited with; -1 otherwise.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended a Failed task (SIGSEGV).
	Signal string `json:"signal,omitempty"`
	// Reason says why a task was Killed or Failed.
	Reason string `json:"reason,omitempty"`
	// Output is the file that holds stdout and stderr, interleaved.
	Output string `json:"output"`
	// Reported is set by MarkReported once the report reached the model.
	Reported bool `json:"reported"`
}

// Exited reports whether the task has ended, however it ended.
func (t Task) Exited() bool { return t.State != Running }

// Duration is how long the task ran, or has been running as of now.
func (t Task) Duration(now time.Time) time.Duration {
	if t.Exited() {
		return t.Ended.Sub(t.Started)
	}
	return now.Sub(t.Started)
}

// Outcome describes how the task ended, for the model and for people:
// "exited with code 0", "killed: timed out after 10m", "failed: terminated
// by signal SIGSEGV".
func (t Task) Outcome() string {
	switch t.State {
	case Running:
		return "still running"
	case Exited:
		return fmt.Sprintf("exited with code %d", t.ExitCode)
	case Killed:
		return "killed: " + t.Reason
	}
	if t.Signal != "" {
		return "failed: terminated by signal " + t.Signal
	}
	return "failed: " + t.Reason
}

// Spec is a task to start.
type Spec struct {
	// Label describes the task to people; empty takes the command's first
	// line.
	Label string
	// Command runs as `sh -c Command`.
	Command string
	Dir     string
	// Env is the complete, already scrubbed environment.
	Env  []string
	Mode sandbox.Mode
	// Writable are the directories a Workspace task may write.
	Writable []string
	// Backend forces a confinement backend; empty picks one.
	Backend string
	// Network opens the network to a confined task.
	Network bool
	// Protected stay read-only to a confined task inside its writable
	// directories (sandbox.Spec.Protected).
	Protected []string
	// Masked are hidden from a confined task, and Visible inside them
	// readable (sandbox.Spec.Masked and Visible).
	Masked, Visible []string
	// Timeout kills the task after this long; zero lets it run until it
	// ends or is killed.
	Timeout time.Duration
}

// Options configures a Registry. The zero value of each field means its
// default.
type Options struct {
	// Dir holds each task's output file and private temp dir; created when
	// missing. Required.
	Dir string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// OnDone is called once for every task that ends, Close's included,
	// from the registry's own goroutine and holding no lock, so it may call
	// back into the registry. Calls for different tasks may be concurrent.
	OnDone func(Task)
	// OnStart is called for every task started, after Start has it
	// running and holding no lock.
	OnStart func(Task)
}

// Registry holds one session's tasks. It is safe for concurrent use.
type Registry struct {
	opts   Options
	ctx    context.Context // parent of every task's context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // one per task still being waited for

	mu     sync.Mutex // guards tasks, order and closed
	tasks  map[string]*entry
	order  []string
	closed bool
}

type entry struct {
	task   Task
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once task holds the outcome
}

// NewRegistry returns an empty registry. It starts nothing until Start;
// it kills the tasks a registry of the same directory left running when
// the process that held it died.
func NewRegistry(opts Options) *Registry {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dir != "" {
		_, _ = sandbox.KillRecorded(filepath.Join(opts.Dir, "running"))
		// Tasks do not outlive the process that started them: the private
		// temp dirs a crashed holder left are nobody's now (the session's
		// lock makes this registry the only one on Dir). Tasks keep them
		// with shell_execute's now (sandbox.MkShellTemp, which
		// sandbox.CleanStale clears); these are an older meka's.
		if stale, err := filepath.Glob(filepath.Join(opts.Dir, "*.tmp")); err == nil {
			for _, d := range stale {
				os.RemoveAll(d)
			}
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Registry{opts: opts, ctx: ctx, cancel: cancel, tasks: make(map[string]*entry)}
}

// Start starts spec in the background and returns it running. A task that
// cannot start is not registered.
func (r *Registry) Start(spec Spec) (Task, error) {
	t, err := r.start(spec)
	if err == nil && r.opts.OnStart != nil {
		r.opts.OnStart(t)
	}
	return t, err
}

func (r *Registry) start(spec Spec) (Task, error) {
	if strings.TrimSpace(spec.Command) == "" {
		return Task{}, errors.New("start task: empty command")
	}
	if r.opts.Dir == "" {
		return Task{}, errors.New("start task: registry has no directory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Task{}, fmt.Errorf("start task: %w", ErrClosed)
	}
	id, err := r.newID()
	if err != nil {
		return Task{}, fmt.Errorf("start task: %w", err)
	}
	if err := os.MkdirAll(r.opts.Dir, 0o700); err != nil {
		return Task{}, fmt.Errorf("start task: %w", err)
	}
	outPath := filepath.Join(r.opts.Dir, id+".out")
	out, err := os.OpenFile(outPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return Task{}, fmt.Errorf("start task: %w", err)
	}
	// Closed by wait once the copy ends; here if the task never starts.
	started := false
	defer func() {
		if !started {
			out.Close()
		}
	}()
	// Where shell_execute's are, so that a launcher can take the task.
	tmp, err := sandbox.MkShellTemp()
	if err != nil {
		return Task{}, fmt.Errorf("start task: %w", err)
	}

	ctx, cancel := context.WithCancelCause(r.ctx)
	stopTimer := func() bool { return false }
	if spec.Timeout > 0 {
		t := time.AfterFunc(spec.Timeout, func() {
			cancel(fmt.Errorf("%w after %s", errTimeout, timeoutText(spec.Timeout)))
		})
		stopTimer = t.Stop
	}
	// Noted before the start, so a death of meka leaves nothing the next
	// registry cannot find.
	run, err := sandbox.Launch(ctx, sandbox.Spec{
		Args:      []string{"sh", "-c", spec.Command},
		Dir:       spec.Dir,
		Env:       spec.Env,
		Mode:      spec.Mode,
		Writable:  spec.Writable,
		TempDir:   tmp,
		Backend:   spec.Backend,
		Network:   spec.Network,
		Protected: spec.Protected,
		Masked:    spec.Masked,
		Visible:   spec.Visible,
	}, filepath.Join(r.opts.Dir, "running"), out, nil)
	if err != nil {
		stopTimer()
		cancel(nil)
		os.RemoveAll(tmp)
		os.Remove(outPath)
		return Task{}, fmt.Errorf("start task: %w", err)
	}

	label := spec.Label
	if label == "" {
		label = defaultLabel(spec.Command)
	}
	e := &entry{
		task: Task{
			ID: id, Label: label, Command: spec.Command, Dir: spec.Dir,
			Started: r.opts.Now(), State: Running, ExitCode: -1, Output: outPath,
		},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	r.tasks[id] = e
	r.order = append(r.order, id)
	started = true
	r.wg.Add(1)
	go r.wait(e, ctx, run, out, tmp, stopTimer)
	return e.task, nil
}

// wait records the outcome of e once its process ends.
func (r *Registry) wait(e *entry, ctx context.Context, run *sandbox.Running, out *os.File, tmp string, stopTimer func() bool) {
	defer r.wg.Done()
	// Wait also kills what the task left running in the background.
	werr := run.Wait()
	stopTimer()
	out.Close()
	os.RemoveAll(tmp)
	cause := context.Cause(ctx)
	e.cancel(nil)

	r.mu.Lock()
	t := &e.task
	t.Ended = r.opts.Now()
	st, ended := run.Status()
	switch {
	case ended && st.Signal == 0:
		t.State, t.ExitCode = Exited, st.Code
	case cause != nil:
		t.State, t.Reason = Killed, cause.Error()
	case ended:
		t.State, t.Signal = Failed, signalName(st.Signal)
	default:
		t.State, t.Reason = Failed, werr.Error()
	}
	done := *t
	close(e.done)
	r.mu.Unlock()

	if r.opts.OnDone != nil {
		r.opts.OnDone(done)
	}
}

// newID returns an unused id of 8 hex digits. Random rather than counted,
// so that an id a resumed session's history mentions is not reused by a
// task of the new process.
func (r *Registry) newID() (string, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := hex.EncodeToString(b[:])
		if _, ok := r.tasks[id]; !ok {
			return id, nil
		}
	}
}

// List returns every task, oldest first.
func (r *Registry) List() []Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Task, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.tasks[id].task)
	}
	return out
}

// Get returns the task called id.
func (r *Registry) Get(id string) (Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.tasks[id]
	if !ok {
		return Task{}, false
	}
	return e.task, true
}

// Kill kills the task called id with every process it started and returns
// once it has ended, with its outcome.
func (r *Registry) Kill(id string) (Task, error) {
	r.mu.Lock()
	e, ok := r.tasks[id]
	if !ok {
		r.mu.Unlock()
		return Task{}, fmt.Errorf("kill task %s: %w", id, ErrUnknown)
	}
	if e.task.Exited() {
		t := e.task
		r.mu.Unlock()
		return t, fmt.Errorf("kill task %s: %w (%s)", id, ErrNotRunning, t.Outcome())
	}
	e.cancel(errKilled)
	r.mu.Unlock()
	<-e.done
	t, _ := r.Get(id)
	return t, nil
}

// MarkReported records that the reports of ids reached the model. Ids of
// unknown or still running tasks are ignored: a running task has nothing
// to report.
func (r *Registry) MarkReported(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if e, ok := r.tasks[id]; ok && e.task.Exited() {
			e.task.Reported = true
		}
	}
}

// Close kills every running task and waits until each has ended and its
// OnDone has returned. Start fails after Close. Close is idempotent.
func (r *Registry) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel(errClosed)
	r.wg.Wait()
	return nil
}

// defaultLabel is the command's first line, cut to 80 characters.
func defaultLabel(command string) string {
	line, _, more := strings.Cut(strings.TrimSpace(command), "\n")
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > 80 {
		line, more = string(r[:79]), true
	}
	if more {
		line += "…"
	}
	return line
}

// timeoutText writes a timeout as people say it, keeping sub-second ones.
func timeoutText(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	return FormatDuration(d)
}
