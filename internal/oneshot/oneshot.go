// Package oneshot is the `meka --oneshot` front door: one turn in a new
// session, the final reply on stdout (as `claude -p` and `codex exec`
// print it, for scripts), tool cards, notices and stage directions on
// stderr, and an exit status that says how the turn ended. With --json,
// stdout is the shared event vocabulary (internal/events), one event a
// line.
//
// It renders typed events only; session lifecycle belongs to host.
package oneshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/events"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// Exit statuses.
const (
	ExitOK       = 0
	ExitFailed   = 1 // the provider or meka failed
	ExitUsage    = 2 // bad flags or configuration
	ExitStopped  = 3 // the turn stopped short: max_tokens, refusal, a limit, an open plan
	ExitCanceled = 130
)

// PlanRenderer turns a plugin event into lines for stderr; it returns
// false for events it does not know. The composition root supplies it so
// that this front door needs no plan dialect.
type PlanRenderer func(ev agent.Event) (string, bool)

// Options configure a run.
type Options struct {
	Stdout, Stderr io.Writer
	// Plan renders plan changes; nil prints none.
	Plan PlanRenderer
	// Verbose shows the session id, thinking, the text of rounds before
	// the last and the instruction files loaded on stderr.
	Verbose bool

	// JSON writes events, one a line, to Stdout instead of the reply;
	// Feed is where the store wrote the rows' durable events, read back
	// for their ids. Relay lets a provider's error text into them.
	JSON  bool
	Feed  events.Store
	Relay bool
	// Resumed says the session existed before this run (-c, -r);
	// Announced that Announce wrote the first line already.
	Resumed, Announced bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Run runs prompt as one turn of s and returns the exit status.
func Run(ctx context.Context, s *host.Session, prompt string, opts Options) int {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.JSON {
		return runJSON(ctx, s, prompt, opts)
	}
	r := &renderer{out: opts.Stdout, err: opts.Stderr, plan: opts.Plan, verbose: opts.Verbose}
	unsubscribe := s.Subscribe(r.event)
	defer unsubscribe()
	if opts.Verbose {
		fmt.Fprintf(opts.Stderr, "meka: session %s\n", s.ID())
	}
	for _, n := range s.StartNotices() {
		r.event(agent.Notice{Notice: n})
	}
	if opts.Verbose {
		for _, f := range s.Instructions() {
			fmt.Fprintf(opts.Stderr, "meka: instructions: %s\n", f)
		}
	}

	res, err := s.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: prompt}}})
	r.endLine()
	if res.Reply != "" {
		io.WriteString(opts.Stdout, res.Reply)
		if !strings.HasSuffix(res.Reply, "\n") {
			io.WriteString(opts.Stdout, "\n")
		}
	}
	return r.exit(res, err)
}

// runJSON is Run with --json: events on stdout, and on stderr only what
// happens before the session exists.
func runJSON(ctx context.Context, s *host.Session, prompt string, opts Options) int {
	if opts.Feed == nil {
		fmt.Fprintln(opts.Stderr, "meka: --json needs a store that keeps the event feed")
		return ExitFailed
	}
	j := newJSONOut(opts.Stdout, opts.Feed, s.ID(), opts.Now, opts.Relay)
	if err := j.start(ctx, s, opts.Resumed, opts.Announced); err != nil {
		fmt.Fprintf(opts.Stderr, "meka: %v\n", err)
		return ExitFailed
	}
	r := &renderer{out: io.Discard, err: io.Discard}
	unsubscribe := s.Subscribe(func(ev agent.Event) {
		j.event(ev)
		r.event(ev)
	})
	defer unsubscribe()
	stop := make(chan struct{})
	tailed := make(chan struct{})
	go func() {
		defer close(tailed)
		j.tail(ctx, stop)
	}()
	res, err := s.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: prompt}}})
	if err != nil && res.Err == nil {
		res.Err = err
	}
	if res.Stop == "" && err != nil {
		res.Stop = agent.StopFailed
	}
	j.end(res)
	close(stop)
	<-tailed
	unsubscribe()
	// The reason for the exit status goes to stderr, as without --json;
	// a fresh renderer, as a late event may still reach r.
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	return (&renderer{out: io.Discard, err: opts.Stderr, failed: failed}).exit(res, err)
}

type renderer struct {
	out, err io.Writer
	plan     PlanRenderer
	verbose  bool

	mu      sync.Mutex // guards midLine and failed
	midLine bool       // stdout's last byte was not a newline
	failed  bool       // the engine's failure notice went out
}

func (r *renderer) event(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case agent.TextChunk:
		// Only the final reply goes to stdout, once the turn ends; the
		// text of earlier rounds is progress.
		if r.verbose {
			io.WriteString(r.err, ev.Text)
		}
	case agent.ThoughtChunk:
		if r.verbose {
			io.WriteString(r.err, ev.Text)
		}
	case agent.ToolCallStarted:
		r.breakLine()
		fmt.Fprintf(r.err, "› %s\n", firstLine(ev.Title))
	case agent.ToolCallFinished:
		if ev.Result.Status != session.StatusOK {
			fmt.Fprintf(r.err, "  %s %s: %s\n", ev.Result.Name, ev.Result.Status, firstLine(model.Message{Parts: ev.Result.Content}.Text()))
		}
	case agent.HookFinished:
		r.breakLine()
		fmt.Fprintln(r.err, "meka: "+ev.Run.Notice().Title)
	case agent.Notice:
		r.breakLine()
		n := ev.Notice
		r.failed = r.failed || n.Severity == session.SeverityError
		line := "meka: " + n.Title
		if n.Description != "" {
			line += ": " + n.Description
		}
		fmt.Fprintln(r.err, line)
	case agent.CompactionStarted:
		r.breakLine()
		fmt.Fprintln(r.err, "meka: compacting the conversation…")
	case agent.Compacted:
		r.breakLine()
		fmt.Fprintf(r.err, "meka: compacted the conversation (dropped %s)\n", ev.Dropped)
	default:
		if r.plan != nil {
			if s, ok := r.plan(ev); ok {
				r.breakLine()
				io.WriteString(r.err, s)
			}
		}
	}
}

// breakLine ends a reply line on stdout before stderr speaks, so the two
// streams interleave readably on one terminal.
func (r *renderer) breakLine() {
	if r.midLine {
		io.WriteString(r.out, "\n")
		r.midLine = false
	}
}

func (r *renderer) endLine() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breakLine()
}

func (r *renderer) exit(res agent.Result, err error) int {
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	switch {
	case res.Stop == agent.StopEndTurn && err == nil:
		return ExitOK
	case res.Stop == agent.StopCanceled || errors.Is(err, context.Canceled):
		fmt.Fprintln(r.err, "meka: canceled")
		return ExitCanceled
	case err != nil && failed:
		return ExitFailed // the failure notice said why
	case err != nil:
		var perr *model.Error
		if errors.As(err, &perr) {
			fmt.Fprintf(r.err, "meka: %s\n", perr.Display())
		} else {
			fmt.Fprintf(r.err, "meka: %v\n", err)
		}
		return ExitFailed
	}
	fmt.Fprintf(r.err, "meka: the turn stopped: %s\n", describe(res.Stop))
	return ExitStopped
}

func describe(s agent.StopReason) string {
	switch s {
	case agent.StopMaxTokens:
		return "max_tokens (the reply hit the output token limit)"
	case agent.StopRefusal:
		return "refusal (the model refused)"
	case agent.StopMaxTurns:
		return "max_turn_requests (the turn used up its model requests)"
	case agent.StopMaxToolCalls:
		return "max_tool_calls (the turn used up its tool calls)"
	case agent.StopRepeat:
		return "repeated_call (the model kept repeating one tool call)"
	}
	return string(s)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
