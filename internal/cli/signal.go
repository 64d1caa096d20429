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
//
// The signals are taken beside the start rather than before it goes on:
// the first signal.Notify starts a thread of its own, a few hundred
// microseconds an editor's handshake need not wait for. Until then a
// signal ends meka as it would any program, which at that point loses
// nothing; opening the host (see awaitSignals) waits for them.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	done, taken := make(chan struct{}), make(chan struct{})
	go func() {
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		close(taken)
		select {
		case s := <-ch:
			cancel(&SignalError{Signal: s.(syscall.Signal)})
			<-done
		case <-done:
		}
		signal.Stop(ch)
	}()
	return context.WithValue(ctx, signalsKey{}, (<-chan struct{})(taken)), func() {
		close(done)
		cancel(context.Canceled)
	}
}

type signalsKey struct{}

// awaitSignals waits until the signals of a SignalContext above ctx are
// taken, so that work which must end cleanly is never killed outright.
func awaitSignals(ctx context.Context) {
	if taken, ok := ctx.Value(signalsKey{}).(<-chan struct{}); ok {
		<-taken
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
