package repl

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
)

// vterm is a virtual terminal the screen writes into: every write wakes
// the waiters, so tests wait on output and never sleep.
type vterm struct {
	mu   sync.Mutex // guards emu's writes and reads of its text; cond's lock
	cond *sync.Cond
	emu  *vt.SafeEmulator
	crlf bool // map LF to CRLF, as a pty's ONLCR would
	raw  bytes.Buffer
}

func newVterm(_ *testing.T, w, h int, crlf bool) *vterm {
	v := &vterm{emu: vt.NewSafeEmulator(w, h), crlf: crlf}
	v.cond = sync.NewCond(&v.mu)
	// The emulator is never closed: vt v0.1.0 reads its closed flag
	// unlocked in Read, which the goroutine draining its replies is always
	// in. That goroutine ends with the test process.
	return v
}

// Write is the only method the program sees, so its two writers (the
// event loop and the renderer) are serialized here.
func (v *vterm) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.raw.Write(p)
	b := p
	if v.crlf {
		b = bytes.ReplaceAll(bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}
	v.emu.Write(b)
	v.cond.Broadcast()
	return len(p), nil
}

// drain answers nothing: the emulator's replies to terminal queries are
// read and dropped so that it never blocks.
func (v *vterm) drain(w io.Writer) {
	go io.Copy(w, v.emu)
}

// text is the scrollback then the screen, as plain text.
func (v *vterm) text() string {
	var b strings.Builder
	for _, l := range v.emu.Scrollback().Lines() {
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	b.WriteString(v.emu.String())
	return b.String()
}

func (v *vterm) screen() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.emu.String()
}

func (v *vterm) all() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.text()
}

// waitFor blocks until pred holds for the terminal's text, each write
// waking it, or fails the test at the deadline.
func (v *vterm) waitFor(t *testing.T, what string, pred func(text string) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		v.mu.Lock()
		v.cond.Broadcast()
		v.mu.Unlock()
	})
	defer stop()
	v.mu.Lock()
	defer v.mu.Unlock()
	for !pred(v.text()) {
		if ctx.Err() != nil {
			t.Fatalf("waiting for %s; the terminal shows:\n%s", what, v.text())
		}
		v.cond.Wait()
	}
}

func (v *vterm) waitText(t *testing.T, s string) {
	t.Helper()
	v.waitFor(t, strconv(s), func(text string) bool { return strings.Contains(text, s) })
}

func strconv(s string) string { return "\"" + s + "\"" }
