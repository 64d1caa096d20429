//go:build unix

package cli

import (
	"context"
	"errors"
	"syscall"
	"testing"
)

// Once awaitSignals returns, a SIGHUP cancels the context with its
// SignalError instead of ending the process.
func TestSignalContextTakesSignals(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	awaitSignals(ctx)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	var se *SignalError
	if !errors.As(context.Cause(ctx), &se) || se.Signal != syscall.SIGHUP || se.ExitCode() != 129 {
		t.Fatalf("cause = %v, want SIGHUP (129)", context.Cause(ctx))
	}
}
