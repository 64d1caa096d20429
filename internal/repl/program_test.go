package repl

import (
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// The real program writing into a virtual terminal: keys go in as the
// bytes a terminal sends, and the test waits on what the terminal shows.
func TestProgramInVirtualTerminal(t *testing.T) {
	const w, h = 60, 12
	term := newVterm(t, w, h, true)
	term.drain(io.Discard)
	f := newFake()
	fire := make(chan struct{})
	fired := make(chan struct{})
	f.run = func(ctx context.Context, msg session.UserMessage) (agent.Result, error) {
		f.emit(agent.TurnStarted{Turn: 1, Input: msg})
		f.emit(plan.Changed{Dialect: "checklist", Total: 1, Items: []plan.Item{{Text: "write the parser", Status: plan.Pending}}})
		f.emit(agent.TextChunk{Text: "Hello back.\n\nSecond block."})
		f.emit(agent.Notice{Notice: session.Notice{Severity: session.SeverityInfo, Title: "Checklist: 1 open item, continuing, nudge 1 of 3"}})
		f.emit(agent.TurnEnded{Result: agent.Result{Turn: 1, Stop: agent.StopEndTurn}})
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	// A scheduled job fires from its own goroutine, as the host's would.
	go func() {
		select {
		case <-fire:
		case <-t.Context().Done():
			return
		}
		f.emit(scheduledTurn("look at the deploy"))
		f.emit(agent.TextChunk{Text: "Deploy is green."})
		// The job's turn asks for approval, through the screen's asker.
		f.mu.Lock()
		a := f.asker
		f.mu.Unlock()
		d, _ := a.Ask(t.Context(), permission.Request{Tool: "shell_execute", Title: "kubectl get pods", Arguments: []byte(`{"command":"kubectl get pods"}`)})
		f.emit(agent.Notice{Notice: session.Notice{Title: "decision " + d.String()}})
		f.emit(agent.TurnEnded{Result: agent.Result{Turn: 2, Stop: agent.StopEndTurn}})
		close(fired)
	}()

	in, keys := io.Pipe()
	done := make(chan error, 1)
	var last Session
	clk := newClock()
	go func() {
		s, err := Run(t.Context(), f, Options{In: in, Out: term, Width: w, Height: h, Now: clk.now,
			Levels: []permission.Level{permission.Read, permission.Workspace}})
		last = s
		done <- err
	}()
	term.waitText(t, "workspace · opus")
	io.WriteString(keys, "hello\r")
	term.waitText(t, "(Checklist: 1 open item, continuing, nudge 1 of 3)")
	term.waitFor(t, "the pinned checklist", func(s string) bool { return strings.Contains(s, "Checklist  □ write the parser") })

	io.WriteString(keys, "half typed")
	term.waitText(t, "> half typed")
	close(fire)
	term.waitText(t, "Allow kubectl get pods?")
	// The clock is frozen, so the pane arms only by its 1.5 s cap... which
	// never passes: keys stay ignored. Move the screen's clock instead.
	io.WriteString(keys, "a") // typed while the pane opened: ignored
	term.waitText(t, "keys armed in")
	clk.add(graceQuiet)
	io.WriteString(keys, "a") // keys were quiet: this one answers
	<-fired
	term.waitText(t, "(shell_execute allowed)")
	term.waitText(t, "> half typed")

	io.WriteString(keys, "\x03\x03") // clear the draft, then arm quitting
	io.WriteString(keys, "\x03")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if last != f {
		t.Errorf("Run returned %v", last)
	}
	all := term.all()
	order := []string{"> hello", "Hello back.", "Second block.", "(Checklist: 1 open item", "(Scheduled job 7f3a1b2c", "> look at the deploy", "Deploy is green.", "(shell_execute allowed)", "(decision allow)"}
	at := 0
	for _, want := range order {
		i := strings.Index(all[at:], want)
		if i < 0 {
			t.Fatalf("%q missing or out of order in:\n%s", want, all)
		}
		at += i
	}
	for _, sgr := range sgrPattern.FindAllStringSubmatch(term.raw.String(), -1) {
		if p := sgr[1]; p != "" && p != "0" {
			t.Errorf("a styled escape %q under NO_COLOR", sgr[0])
			break
		}
	}
}

// sgrPattern matches Select Graphic Rendition sequences.
var sgrPattern = regexp.MustCompile(`\x1b\[([0-9;:]*)m`)
