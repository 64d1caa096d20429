//go:build linux

package sandbox

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/testenv"
)

// lockedBuffer is a bytes.Buffer safe for the copiers' concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestStartSeparatesStreams(t *testing.T) {
	for _, base := range modes(t) {
		t.Run(base.Mode.String()+"/"+base.Backend, func(t *testing.T) {
			spec := base
			spec.Args = []string{"sh", "-c", "echo out; echo err >&2; echo err2 >/dev/stderr; echo out2 >/dev/stdout; exit 4"}
			spec.Env = []string{testPath}
			spec.TempDir = canonTemp(t)
			cmd, err := Command(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			var stdout, stderr lockedBuffer
			run, err := Start(cmd, &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			err = run.Wait()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 4 {
				t.Errorf("Wait = %v, want exit code 4", err)
			}
			if stdout.String() != "out\nout2\n" || stderr.String() != "err\nerr2\n" {
				t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

func TestStartInterleavedAndLeftovers(t *testing.T) {
	cmd, err := Command(t.Context(), Spec{
		Args: []string{"sh", "-c", "echo one; echo two >&2; echo three; sleep 100 & echo $!"},
		Env:  []string{testPath},
		Mode: Unrestricted,
		// A bound the test would notice: the background sleep holds the
		// pipe, and Wait must not need the delay to end it.
		WaitDelay: 10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	run, err := Start(cmd, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || strings.Join(lines[:3], " ") != "one two three" {
		t.Fatalf("output = %q", out.String())
	}
	pid, err := strconv.Atoi(lines[3])
	if err != nil {
		t.Fatal(err)
	}
	testenv.AssertGone(t, pid)
}
