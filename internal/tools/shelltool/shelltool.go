// Package shelltool owns shell_execute, meka's built-in shell tool: it runs
// `sh -c command` in the session's cwd under the confinement of the level
// the call runs at (read-only at read, the workspace roots at workspace,
// none at unrestricted), with the environment scrubbed of credentials, a
// timeout that kills the whole process group, live output for front
// doors, stdout and stderr kept apart for the model, large output moved to
// the session's scratchpad, and background tasks.
//
// Where neither Landlock nor bubblewrap can confine, the tool declares
// that it needs unrestricted, so read and workspace refuse it: it never
// runs unconfined while a level is claimed.
//
// It imports tool, permission, model, internal/sandbox and internal/task.
package shelltool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/task"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/tool"
)

// Name is the tool's name.
const Name = "shell_execute"

// Defaults for Options' zero values, and the schema's bounds.
const (
	DefaultTimeout   = 120 * time.Second
	MaxTimeout       = 3600 * time.Second
	DefaultHeadBytes = 16 << 10
	DefaultMaxSpill  = 64 << 20
	// LiveInterval is the least time between two live output chunks.
	LiveInterval = 150 * time.Millisecond
)

var (
	errNoScratch = errors.New("this session has no scratchpad")
	errSpillFull = errors.New("the scratchpad file reached its size limit")
)

// Options configure the shell tool of one session. The zero value of each
// optional field means its default.
type Options struct {
	// Roots returns the session's current roots; a workspace call writes
	// only inside their writable directories. Nil takes the call's cwd as
	// the only root.
	Roots func() *sandbox.Roots
	// Tasks is the session's task registry; nil refuses background calls.
	Tasks *task.Registry
	// NoTasks, when Tasks is nil, is the reason a background call is given
	// (a sub-agent has none); empty says the session has none.
	NoTasks string
	// ScratchDir is the session's scratchpad, where large output goes.
	ScratchDir string
	// Env is the environment commands start from (the composition root
	// passes its own). A confined command gets only its allow-listed
	// variables (sandbox.ConfinedEnv); an unrestricted one gets it
	// scrubbed of credentials (sandbox.ScrubEnv).
	Env []string
	// ScrubNames are the provider key variables the profiles name, removed
	// from an unrestricted command's Env with the *_API_KEY, *_TOKEN and
	// *_SECRET patterns.
	ScrubNames []string
	// EnvPassthrough are globs of variables a confined command gets
	// besides the allow-list ([permissions] env_passthrough).
	EnvPassthrough []string
	// Network opens the network to confined commands ([permissions]
	// network).
	Network bool
	// Protected are paths confined commands may not write even inside a
	// writable root: meka's config and data directories. Each root's
	// .git/hooks and .git/config are protected as well.
	Protected []string
	// Masked are hidden from confined commands, read and write: meka's
	// data and config directories (the serve token, the database, other
	// sessions' logs). Visible inside them stay readable: the session's
	// scratchpad and task output.
	Masked, Visible []string
	// RunningDir is where the process groups of running commands are
	// noted, so that the next holder of the session kills what this one
	// left running if it dies (sandbox.KillRecorded); empty notes none.
	RunningDir string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Available reports the backend that confines a mode with the
	// network open or closed; sandbox.AvailableNetwork when nil.
	Available func(mode sandbox.Mode, network bool) (string, error)
	// Ticker paces live output: it returns a channel that ticks every d
	// and a function that stops it. A time.Ticker when nil.
	Ticker func(d time.Duration) (<-chan time.Time, func())
	// WithTimeout bounds a call; context.WithTimeout when nil.
	WithTimeout func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc)
	// HeadBytes bounds the output a result carries inline, both streams
	// together; DefaultHeadBytes when zero.
	HeadBytes int
	// MaxSpill bounds each stream's scratchpad file; DefaultMaxSpill when
	// zero.
	MaxSpill int64
}

// Tool is shell_execute.
type Tool struct {
	opts Options
	// confined is whether read-only and workspace commands can be
	// confined here, fixed when the tool is built; why says why not.
	confined bool
	why      error
	// backend is what confines them.
	backend string
}

var (
	_ tool.Tool   = (*Tool)(nil)
	_ tool.Titler = (*Tool)(nil)
)

// New returns shell_execute for one session.
func New(opts Options) *Tool {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Available == nil {
		opts.Available = sandbox.AvailableNetwork
	}
	if opts.Ticker == nil {
		opts.Ticker = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}
	}
	if opts.WithTimeout == nil {
		opts.WithTimeout = context.WithTimeout
	}
	if opts.HeadBytes <= 0 {
		opts.HeadBytes = DefaultHeadBytes
	}
	if opts.MaxSpill <= 0 {
		opts.MaxSpill = DefaultMaxSpill
	}
	_, errRead := opts.Available(sandbox.ReadOnly, opts.Network)
	backend, errWorkspace := opts.Available(sandbox.Workspace, opts.Network)
	return &Tool{opts: opts, confined: errRead == nil && errWorkspace == nil, why: errors.Join(errRead, errWorkspace), backend: backend}
}

const descriptionHead = `Run a command with sh -c in the working directory; the result gives the exit code, with stdout and stderr apart.

`

// confinement says what holds at each level, so the model knows what a
// failure means before it meets one.
func (t *Tool) confinement() string {
	if !t.confined {
		return fmt.Sprintf("Commands cannot be confined on this machine (%v), so this tool needs the unrestricted level: it runs with the user's full rights and meka's environment less credential-like variables (*_API_KEY, *_TOKEN, *_SECRET and the provider key variables).\n\n", t.why)
	}
	network := "The network is closed: no TCP, UDP, abstract or outside Unix socket reaches anything (127.0.0.1 inside the command works for its own servers)."
	if t.opts.Network {
		network = "The network is open (the configuration says so)."
	}
	return fmt.Sprintf("Confinement (%s) follows the permission level: at read the command may write only in its private temp dir ($TMPDIR); at workspace only inside the workspace directories and $TMPDIR. Elsewhere nothing changes, not even modes, times or owners; each workspace's .git/hooks and .git/config stay read-only too. meka's own config and data directories look empty and take no writes, but for this session's scratchpad and task output and the skill directories, which it may read. %s Signals reach only the command's own processes. The environment holds only PATH, HOME, USER, LOGNAME, SHELL, TERM, LANG, LC_*, TZ and TMPDIR%s: no credentials. At unrestricted none of this holds: the command runs with the user's full rights, the network, and meka's environment less credential-like variables (*_API_KEY, *_TOKEN, *_SECRET).\n\n", t.backend, network, passthroughText(t.opts.EnvPassthrough))
}

func passthroughText(globs []string) string {
	if len(globs) == 0 {
		return ""
	}
	return ", plus " + strings.Join(globs, ", ")
}

const descriptionTail = `Past its timeout (default 120 seconds, at most 3600) a command is killed with every process it started; what it leaves running in the background is stopped when it exits.`

// descriptionTasks offers background tasks, to a session that has them.
const descriptionTasks = ` For long work (a server, a long build or test run) set background: true: you get a task id at once, and its outcome and output in a turn of their own when it ends.`

const descriptionScratch = `

Large output is cut and saved whole to a scratchpad file named in the result, for file_read.`

var schema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run with sh -c."},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command and every process it started are killed. Default 120; a background task has none unless given."},
    "background": {"type": "boolean", "description": "Start the command as a background task and return its id at once; its report arrives as a turn of its own when it ends."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// schemaNoTasks is the schema of a session without background tasks (a
// sub-agent's): a parameter the tool would only refuse is not offered.
var schemaNoTasks = json.RawMessage(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The command line, run with sh -c."},
    "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds before the command and every process it started are killed. Default 120."}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// Spec declares shell_execute. It needs read where commands can be
// confined and unrestricted where they cannot.
func (t *Tool) Spec() tool.Spec {
	level := permission.Unrestricted
	if t.confined {
		level = permission.Read
	}
	desc, sch := descriptionHead+t.confinement()+descriptionTail+descriptionTasks+descriptionScratch, schema
	if t.opts.Tasks == nil {
		desc, sch = descriptionHead+t.confinement()+descriptionTail+descriptionScratch, schemaNoTasks
	}
	return tool.Spec{
		Name:        Name,
		Description: desc,
		Schema:      sch,
		Level:       level,
		Kind:        tool.KindExecute,
	}
}

type args struct {
	Command    string `json:"command"`
	Timeout    *int   `json:"timeout"`
	Background bool   `json:"background"`
}

// Title is the command itself, whole, its line breaks kept: clients show
// an execute call's title as the command.
func (t *Tool) Title(raw json.RawMessage) string {
	var a args
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	return a.Command
}

// State is the structured result of a call, for front doors (an ACP
// terminal closes with the real exit code and signal).
type State struct {
	// ExitCode is -1 when the command did not exit on its own.
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Canceled bool   `json:"canceled,omitempty"`
	// Sandbox is the backend that confined the command, empty when
	// unconfined.
	Sandbox string       `json:"sandbox,omitempty"`
	Stdout  *StreamState `json:"stdout,omitempty"`
	Stderr  *StreamState `json:"stderr,omitempty"`
	// Task is the background task a background call started.
	Task *task.Task `json:"task,omitempty"`
}

// StreamState describes one output stream.
type StreamState struct {
	Bytes int64 `json:"bytes"`
	// Scratch is the scratchpad file holding the whole stream, when the
	// result shows only part of it.
	Scratch string `json:"scratch,omitempty"`
}

// Run runs the call's command.
func (t *Tool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var a args
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return tool.Errorf("shell_execute: the arguments are not valid JSON (%v). Send {\"command\": \"...\"}.", err), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return tool.Errorf("shell_execute needs a command: send {\"command\": \"...\"}."), nil
	}
	mode, ok := modeFor(call.Level)
	if !ok {
		return tool.Errorf("shell_execute was refused: this session's permission level is %s.", call.Level), nil
	}
	backend, err := t.opts.Available(mode, t.opts.Network)
	if err != nil {
		return tool.Errorf("shell_execute was refused at the %s level: %v. meka never runs a command unconfined while a level is claimed, so commands need the unrestricted level on this machine; ask the user to raise it.", call.Level, err), nil
	}
	cwd, writable, err := t.where(call, mode)
	if err != nil {
		return tool.Result{}, err
	}
	var env []string
	if mode == sandbox.Unrestricted {
		env = sandbox.ScrubEnv(t.opts.Env, t.opts.ScrubNames)
	} else {
		env = sandbox.ConfinedEnv(t.opts.Env, t.opts.EnvPassthrough)
	}

	if a.Background {
		return t.background(a, cwd, env, mode, writable, backend)
	}
	timeout := DefaultTimeout
	if a.Timeout != nil {
		timeout = min(max(time.Duration(*a.Timeout)*time.Second, time.Second), MaxTimeout)
	}
	return t.foreground(ctx, call, timeout, sandbox.Spec{
		Args: []string{"sh", "-c", a.Command}, Dir: cwd, Env: env,
		Mode: mode, Writable: writable, Backend: backend,
		Network: t.opts.Network, Protected: t.opts.Protected,
		Masked: t.opts.Masked, Visible: t.opts.Visible,
	})
}

func modeFor(l permission.Level) (sandbox.Mode, bool) {
	switch l {
	case permission.Read:
		return sandbox.ReadOnly, true
	case permission.Workspace:
		return sandbox.Workspace, true
	case permission.Unrestricted:
		return sandbox.Unrestricted, true
	}
	return 0, false
}

// where returns the directory a call runs in and what it may write.
func (t *Tool) where(call tool.Call, mode sandbox.Mode) (string, []string, error) {
	var roots *sandbox.Roots
	if t.opts.Roots != nil {
		roots = t.opts.Roots()
	}
	cwd := call.Cwd
	if cwd == "" && roots != nil {
		cwd = roots.Cwd()
	}
	if cwd == "" {
		return "", nil, errors.New("run shell_execute: the call has no working directory")
	}
	if mode != sandbox.Workspace {
		return cwd, nil, nil
	}
	if roots == nil {
		r, err := sandbox.NewRoots(cwd, nil, nil)
		if err != nil {
			return "", nil, fmt.Errorf("run shell_execute: %w", err)
		}
		roots = r
	}
	return cwd, roots.Writable(), nil
}

func (t *Tool) background(a args, cwd string, env []string, mode sandbox.Mode, writable []string, backend string) (tool.Result, error) {
	if t.opts.Tasks == nil {
		why := t.opts.NoTasks
		if why == "" {
			why = "this session has no background tasks"
		}
		return tool.Errorf("shell_execute cannot start a background task: %s. Run the command without background.", why), nil
	}
	var timeout time.Duration
	if a.Timeout != nil {
		timeout = min(max(time.Duration(*a.Timeout)*time.Second, time.Second), MaxTimeout)
	}
	tk, err := t.opts.Tasks.Start(task.Spec{
		Command: a.Command, Dir: cwd, Env: env, Mode: mode,
		Writable: writable, Backend: backend, Timeout: timeout,
		Network: t.opts.Network, Protected: t.opts.Protected,
		Masked: t.opts.Masked, Visible: t.opts.Visible,
	})
	if err != nil {
		return tool.Errorf("shell_execute could not start the background task: %v", err), nil
	}
	text := fmt.Sprintf("Started background task %s. It runs on after this call; when it ends, its outcome and output are reported to you in a turn of their own. Its output (stdout and stderr together) is being written to %s.", tk.ID, tk.Output)
	if timeout > 0 {
		text += fmt.Sprintf(" It is killed if it runs longer than %s.", task.FormatDuration(timeout))
	}
	st, _ := json.Marshal(State{ExitCode: -1, Sandbox: backend, Task: &tk})
	return tool.Result{Content: []model.Part{model.Text{Text: text}}, State: st}, nil
}

func (t *Tool) foreground(ctx context.Context, call tool.Call, timeout time.Duration, spec sandbox.Spec) (tool.Result, error) {
	if spec.Mode != sandbox.Unrestricted {
		tmp, err := sandbox.MkShellTemp()
		if err != nil {
			return tool.Result{}, fmt.Errorf("run shell_execute: %w", err)
		}
		defer os.RemoveAll(tmp)
		spec.TempDir = tmp
	}
	runCtx, cancel := t.opts.WithTimeout(ctx, timeout)
	defer cancel()

	var lv *live
	if call.Output != nil {
		lv = &live{out: call.Output}
	}
	create := t.scratch(call)
	stdout := &stream{name: "stdout", limit: t.opts.HeadBytes, maxSpill: t.opts.MaxSpill, create: create, live: lv}
	stderr := &stream{name: "stderr", limit: t.opts.HeadBytes, maxSpill: t.opts.MaxSpill, create: create, live: lv}
	defer stdout.close()
	defer stderr.close()

	stopLive := func() {}
	if lv != nil {
		ticks, stopTicker := t.opts.Ticker(LiveInterval)
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			lv.run(ticks, stop)
		}()
		stopLive = func() {
			close(stop)
			<-stopped
			stopTicker()
		}
	}
	// Noted before the start: a death of meka at any point after leaves
	// nothing the next holder cannot find.
	run, err := sandbox.Launch(runCtx, spec, t.opts.RunningDir, stdout, stderr)
	if err != nil {
		stopLive()
		if errors.Is(err, sandbox.ErrNoConfinement) {
			return tool.Errorf("shell_execute was refused: %v. meka never runs a command unconfined while a level is claimed.", err), nil
		}
		return tool.Errorf("shell_execute could not start the command: %v", err), nil
	}
	werr := run.Wait()
	stopLive() // the last Output call happens before Run returns

	st := State{ExitCode: -1, Sandbox: spec.Backend}
	ended, ok := run.Status()
	if ok {
		st.ExitCode, st.Signal = ended.Code, signalName(ended.Signal)
	}
	switch {
	case ctx.Err() != nil:
		st.Canceled = true
	case runCtx.Err() != nil && st.ExitCode < 0:
		st.TimedOut = true
	}
	if !ok {
		return tool.Errorf("shell_execute: the command failed: %v", werr), nil
	}
	return t.result(timeout, st, stdout, stderr), nil
}

// scratch returns the function that creates a stream's scratchpad file,
// nil without a scratchpad.
func (t *Tool) scratch(call tool.Call) func(name string) (*os.File, error) {
	if t.opts.ScratchDir == "" {
		return nil
	}
	return func(name string) (*os.File, error) {
		if err := os.MkdirAll(t.opts.ScratchDir, 0o700); err != nil {
			return nil, err
		}
		stamp := t.opts.Now().UTC().Format("20060102T150405")
		return os.CreateTemp(t.opts.ScratchDir, fmt.Sprintf("%s-%s-*.%s.txt", Name, stamp, name))
	}
}
