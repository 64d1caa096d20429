//go:build unix

package hooks_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"meka.dev/meka/internal/hooks"
)

// Canceling the turn kills a running hook and everything it started.
func TestCancelKillsHook(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan hooks.Outcome)
	go func() {
		done <- runner(dir).Run(ctx, match(`echo $$ > started; sleep 1000`, time.Hour), nil)
	}()
	b, err := os.ReadFile(fifo) // returns once the hook wrote and closed
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	o := <-done
	if !o.Canceled || o.Exit != -1 {
		t.Fatalf("outcome = %+v", o)
	}
	d := hooks.Decide(hooks.PreToolUse, "", []hooks.Outcome{o})
	if d.Block || len(d.Notices) != 0 || d.Runs[0].Decision != "canceled" {
		t.Fatalf("decision = %+v", d)
	}
	_ = b
}
