package repl

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// syncBuffer is an output that tests read while the loop writes.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	cond *sync.Cond
}

func newSyncBuffer() *syncBuffer {
	s := &syncBuffer{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	s.cond.Broadcast()
	return len(p), nil
}

func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	stop := context.AfterFunc(t.Context(), func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !strings.Contains(s.b.String(), want) {
		if t.Context().Err() != nil {
			t.Fatalf("waiting for %q in %q", want, s.b.String())
		}
		s.cond.Wait()
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Line mode prints every turn, also one the session ran on its own, and
// a line read while a turn runs waits for it: none is dropped, and one
// refused because another turn held the session runs after it.
func TestPlainModeQueuesAndPrintsEveryTurn(t *testing.T) {
	f := newFake()
	release := make(chan struct{})
	var calls []string
	var mu sync.Mutex
	busyOnce := true
	f.run = func(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
		text := messageText(msg.Parts)
		mu.Lock()
		calls = append(calls, text)
		refuse := text == "third" && busyOnce
		busyOnce = busyOnce && !refuse
		mu.Unlock()
		if refuse {
			// A job's turn holds the session: it runs and ends, and the
			// refused line is sent again once it has.
			go func() {
				f.emit(scheduledTurn("look at the deploy"))
				f.emit(agent.TextChunk{Text: "Deploy is green.\n"})
				f.emit(agent.TurnEnded{Result: agent.Result{Stop: agent.StopEndTurn}})
			}()
			return agent.Result{}, agent.ErrBusy
		}
		f.emit(agent.TurnStarted{Turn: 1, Input: msg})
		if text == "first" {
			<-release
		}
		f.emit(agent.TextChunk{Text: "reply to " + text})
		f.emit(agent.TurnEnded{Result: agent.Result{Stop: agent.StopEndTurn}})
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	in, w := io.Pipe()
	out := newSyncBuffer()
	done := make(chan error, 1)
	go func() {
		_, err := Run(t.Context(), f, Options{In: in, Out: out, Plain: true, Now: newClock().now})
		done <- err
	}()
	io.WriteString(w, "first\n")
	out.waitFor(t, "> first")
	io.WriteString(w, "second\n") // read while "first" runs
	mu.Lock()
	n := len(calls)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d turns started while the first ran", n)
	}
	close(release)
	out.waitFor(t, "reply to second")
	io.WriteString(w, "third\n")
	out.waitFor(t, "reply to third")
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	inOrder(t, got, "> first", "reply to first", "> second", "reply to second",
		"(Scheduled job 7f3a1b2c", "> look at the deploy", "Deploy is green.", "> third", "reply to third")
	if strings.Contains(got, "\x1b[") {
		t.Errorf("escape codes in line mode: %q", got)
	}
}

// Line mode at a terminal asks an approval as a line and reads the next
// line as the answer; not at a terminal it denies with a notice.
func TestPlainModeAsksAtATerminal(t *testing.T) {
	for _, ask := range []bool{true, false} {
		f := newFake()
		decided := make(chan permission.Decision, 1)
		f.run = func(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
			f.mu.Lock()
			a := f.asker
			f.mu.Unlock()
			d, _ := a.Ask(ctx, permission.Request{Tool: "shell_execute", Title: `shell_execute go test ./...`})
			decided <- d
			return agent.Result{Stop: agent.StopEndTurn}, nil
		}
		in, w := io.Pipe()
		out := newSyncBuffer()
		done := make(chan error, 1)
		go func() {
			_, err := Run(t.Context(), f, Options{In: in, Out: out, Plain: true, Ask: ask, Now: newClock().now})
			done <- err
		}()
		io.WriteString(w, "run the tests\n")
		if !ask {
			out.waitFor(t, "(shell_execute denied: approvals need a terminal")
			if d := <-decided; d != permission.Deny {
				t.Fatalf("not at a terminal: %v", d)
			}
			w.Close()
			<-done
			continue
		}
		out.waitFor(t, `Allow shell_execute go test ./...? [y/N/a/d]`)
		io.WriteString(w, "a\n")
		if d := <-decided; d != permission.AlwaysAllow {
			t.Fatalf("answered a: %v", d)
		}
		out.waitFor(t, "(shell_execute: always allowed)")
		w.Close()
		<-done
	}
}

// Line mode answers an unknown /word itself and sends nothing; /quit
// ends it before the lines after it; " /word" and paths are prompts.
func TestPlainModeSlashCommandsStayLocal(t *testing.T) {
	f := newFake()
	var sent []string
	f.run = func(_ context.Context, msg session.UserMessage) (agent.Result, error) {
		sent = append(sent, messageText(msg.Parts))
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	out := newSyncBuffer()
	in := strings.NewReader("/stauts\n /stauts as text\n/etc/hosts is odd\n/quit\nnever\n")
	if _, err := Run(t.Context(), f, Options{In: in, Out: out, Plain: true, Now: newClock().now}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "(! unknown command /stauts (did you mean /status?); nothing was sent.") {
		t.Fatalf("output %q", out.String())
	}
	if strings.Join(sent, "|") != " /stauts as text|/etc/hosts is odd" {
		t.Fatalf("sent %q", sent)
	}
}
