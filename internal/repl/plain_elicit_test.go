package repl

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/mcp/mcptest"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// elicitingSession is a fake session whose turns call a tool of a real
// MCP server (mcptest over HTTP); the server's elicitation goes to the
// elicitor line mode sets, and is declined with a notice when none is, as
// a host session does.
type elicitingSession struct {
	*fakeSession
	emu sync.Mutex
	el  host.Elicitor
}

func (s *elicitingSession) SetElicitor(e host.Elicitor) {
	s.emu.Lock()
	s.el = e
	s.emu.Unlock()
}

func (s *elicitingSession) elicit(ctx context.Context, e host.Elicitation) (host.ElicitResult, error) {
	s.emu.Lock()
	el := s.el
	s.emu.Unlock()
	if el == nil {
		s.emit(agent.Notice{Notice: session.Notice{Severity: session.SeverityWarning, Title: "Declined a request for input from MCP server " + e.Server}})
		return host.ElicitResult{Action: host.ElicitDecline}, nil
	}
	return el.Elicit(ctx, e)
}

// newElicitingSession returns the session and its MCP tools: a turn's
// text names the tool and its arguments ("ask {...}"), and its reply is
// the tool's result.
func newElicitingSession(t *testing.T) *elicitingSession {
	t.Helper()
	ts := httptest.NewServer(mcptest.Handler(mcptest.New(mcptest.Options{})))
	t.Cleanup(ts.Close)
	m := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "t", URL: ts.URL, StartupTimeout: 20 * time.Second, ToolTimeout: 20 * time.Second}}})
	m.Start(t.Context())
	t.Cleanup(func() { _ = m.Close() })
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := &elicitingSession{fakeSession: newFake()}
	reg := tool.NewRegistry()
	reg.AddSource(m.Source(&mcp.Binding{Elicitor: mcp.ElicitorFunc(s.elicit)}), nil)
	s.run = func(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
		name, args, _ := strings.Cut(messageText(msg.Parts), " ")
		s.emit(agent.TurnStarted{Turn: 1, Input: msg})
		tl, ok := reg.Get("mcp__t__" + name)
		if !ok {
			t.Errorf("no tool %s", name)
			return agent.Result{}, nil
		}
		res, err := tl.Run(ctx, tool.Call{ID: "c1", Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Errorf("run %s: %v", name, err)
		}
		s.emit(agent.TextChunk{Text: "result: " + model.Message{Parts: res.Content}.Text() + "\n"})
		s.emit(agent.TurnEnded{Result: agent.Result{Stop: agent.StopEndTurn}})
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	return s
}

// runPlainWith runs line mode over s with ask set, returning where to
// type and what it printed.
func runPlainWith(t *testing.T, s Session, ask bool) (io.WriteCloser, *syncBuffer, <-chan error) {
	t.Helper()
	in, w := io.Pipe()
	out := newSyncBuffer()
	done := make(chan error, 1)
	go func() {
		_, err := Run(t.Context(), s, Options{In: in, Out: out, Plain: true, Ask: ask, Now: newClock().now})
		done <- err
	}()
	return w, out, done
}

// At a terminal, line mode asks a server's form field by field, in the
// schema's order, showing each field's type, choices and default, and
// asks again after an answer that does not fit; the server gets the
// values typed. A URL is shown and the person says when it is done.
func TestPlainModeAsksElicitations(t *testing.T) {
	s := newElicitingSession(t)
	w, out, done := runPlainWith(t, s, true)
	say := func(l string) { t.Helper(); io.WriteString(w, l+"\n") }

	say(`survey {}`)
	out.waitFor(t, "MCP server t asks: Tell us about you.")
	out.waitFor(t, "Answer? [y/N/c]")
	say("y")
	// The SDK hands the schema over re-encoded, its properties by name.
	out.waitFor(t, "age [a whole number; from 0 to 150; required]")
	say("")
	out.waitFor(t, "(age is required)")
	say("old")
	out.waitFor(t, "(age: not a whole number; try again)")
	say("200")
	out.waitFor(t, "(age: more than 150; try again)")
	say("42")
	out.waitFor(t, "color [one of red, green, blue; empty takes blue]")
	say("purple")
	out.waitFor(t, `(color: "purple" is not one of red, green, blue; try again)`)
	say("")
	out.waitFor(t, "height [a number; optional, empty skips]: In metres")
	say("1.8")
	out.waitFor(t, "name (Name) [text; at least 2 characters; required]: What to call you")
	say("A")
	out.waitFor(t, "(name: less than 2 characters; try again)")
	say("Ada")
	out.waitFor(t, "news (Newsletter) [yes or no; optional, empty skips]")
	say("maybe")
	out.waitFor(t, "(news: answer yes or no; try again)")
	say("y")
	out.waitFor(t, "size [one of s (Small), l (Large); optional, empty skips]")
	say("large")
	out.waitFor(t, "tags [any of a, b, c, separated by commas; at most 2 choices; optional, empty skips]")
	say("a, b, c")
	out.waitFor(t, "(tags: more than 2 choices; try again)")
	say("a,c")
	out.waitFor(t, "(MCP server t: answered)")
	out.waitFor(t, `result: accept {"age":42,"color":"blue","height":1.8,"name":"Ada","news":true,"size":"l","tags":["a","c"]}`)

	// An optional field left empty is not sent; c cancels, N declines.
	say(`survey {}`)
	out.waitFor(t, "MCP server t asks: Tell us about you.\nAnswer? [y/N/c]")
	say("c")
	out.waitFor(t, "(MCP server t: cancelled)")
	out.waitFor(t, "result: cancel null")
	say(`ask {"mode":"form"}`)
	out.waitFor(t, "MCP server t asks: What is your name?\nAnswer? [y/N/c]")
	say("n")
	out.waitFor(t, "(MCP server t: declined)")
	out.waitFor(t, "result: decline null")

	say(`ask {"mode":"url"}`)
	out.waitFor(t, "MCP server t asks: Sign in\n  Open https://example.com/login\nDone? [y/N/c]")
	say("y")
	out.waitFor(t, "(MCP server t: done)")
	out.waitFor(t, "result: accept null")
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("escape codes in line mode: %q", out.String())
	}
}

// Not at a terminal nobody is asked: the elicitation is declined and the
// session's notice says so.
func TestPlainModeDeclinesElicitationsWithoutATerminal(t *testing.T) {
	s := newElicitingSession(t)
	w, out, done := runPlainWith(t, s, false)
	io.WriteString(w, `ask {"mode":"form"}`+"\n")
	out.waitFor(t, "Declined a request for input from MCP server t")
	out.waitFor(t, "result: decline null")
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Answer?") {
		t.Errorf("asked without a terminal: %q", out.String())
	}
}

// A server's text reaches the terminal without what a terminal obeys,
// and a form whose schema line mode cannot put is declined.
func TestPlainElicitSanitisesAndRefusesOddForms(t *testing.T) {
	pr := &plainPrinter{w: newSyncBuffer(), idle: make(chan struct{}, 1)}
	out := pr.w.(*syncBuffer)
	lines := make(chan string, 4)
	lines <- "y"
	p := &plainAsk{}
	r, err := p.elicit(t.Context(), pr, lines, host.Elicitation{Server: "t", Mode: host.ElicitURL, Message: "go\x1b]0;pwned\x07 now",
		URL: "https://example.com/\x1b[2Jx"})
	if err != nil || r.Action != host.ElicitAccept {
		t.Fatalf("url: %+v %v", r, err)
	}
	if got := out.String(); strings.Contains(got, "\x1b") || !strings.Contains(got, "Open https://example.com/x") {
		t.Fatalf("unsanitised: %q", got)
	}
	r, _ = p.elicit(t.Context(), pr, lines, host.Elicitation{Server: "t", Mode: host.ElicitForm, Message: "nested",
		Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"object"}}}`)})
	if r.Action != host.ElicitDecline || !strings.Contains(out.String(), `(the form cannot be asked here: field a has type "object")`) {
		t.Fatalf("odd form: %+v %q", r, out.String())
	}
	close(lines)
	r, _ = p.elicit(t.Context(), pr, lines, host.Elicitation{Server: "t", Mode: host.ElicitForm, Message: "eof",
		Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
	if r.Action != host.ElicitCancel {
		t.Fatalf("at the end of input: %+v", r)
	}
}
