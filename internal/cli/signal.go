package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmbracelet/x/term"

	"meka.dev/meka/internal/oneshot"
	"meka.dev/meka/internal/termsafe"
)

// SignalError is the cause of a context canceled by a signal meka ends
// its work on: Ctrl+C (SIGINT), SIGTERM from a supervisor, SIGHUP from a
// closed terminal. All three end a turn the way Ctrl+C does.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "received " + e.Signal.String() }

// ExitCode is the shell's status for a process ended by the signal.
func (e *SignalError) ExitCode() int { return 128 + int(e.Signal) }

// SignalContext returns a context canceled, with a *SignalError as its
// cause, when SIGINT, SIGTERM or SIGHUP arrives. stop releases the
// signals.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			cancel(&SignalError{Signal: s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}

// signalExit maps the cancelled exit status to the signal that caused it:
// 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.
func signalExit(ctx context.Context, code int) int {
	var se *SignalError
	if code == oneshot.ExitCanceled && errors.As(context.Cause(ctx), &se) {
		return se.ExitCode()
	}
	return code
}

// terminalSafe wraps w, when it is a terminal, so that text a model wrote
// cannot drive it: control sequences are dropped, colour kept unless
// NO_COLOR is set. Output to a file or a pipe passes unchanged.
func (g *globals) terminalSafe(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		return w // a file, a pipe, /dev/null: unchanged
	}
	return termsafe.NewWriter(w, g.getenv("NO_COLOR") == "")
}
