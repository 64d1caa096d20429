package repl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// The model driven by typed events and keys, with an injected clock.
// Commits stay in the outbox (no first frame), where the tests read them.

type harness struct {
	t   *testing.T
	m   *screen
	f   *fakeSession
	clk *clock
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	f := newFake()
	clk := newClock()
	m := newScreen(t.Context(), f, Options{Width: 100, Height: 20, Now: clk.now,
		Levels: []permission.Level{permission.Read, permission.Workspace, permission.Unrestricted}})
	m.hold(f)
	return &harness{t: t, m: m, f: f, clk: clk}
}

func (h *harness) send(msgs ...tea.Msg) {
	for _, msg := range msgs {
		h.m.Update(msg)
	}
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		if r == '\n' {
			h.send(keyMod(tea.KeyEnter, tea.ModAlt))
			continue
		}
		h.send(keyText(string(r)))
	}
}

// submitText submits text as Enter would, and runs what it starts (a
// command's work, a turn) to its answer.
func (h *harness) submitText(text string) {
	if cmd := h.m.submit(text); cmd != nil {
		runMsgs(h, cmd)
	}
}

func runMsgs(h *harness, cmd tea.Cmd) {
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			if c != nil {
				runMsgs(h, c)
			}
		}
	case nil:
	default:
		h.send(msg)
	}
}

func (h *harness) event(ev agent.Event) { h.send(eventMsg{sid: h.f.id, ev: ev}) }

func (h *harness) committed() string { return strings.Join(h.m.outbox, "\n") }

func (h *harness) wantCommitted(parts ...string) {
	h.t.Helper()
	got := h.committed()
	flat := strings.Join(strings.Fields(got), " ") // wrapped lines joined
	for _, p := range parts {
		if !strings.Contains(got, p) && !strings.Contains(flat, p) {
			h.t.Errorf("scrollback lacks %q:\n%s", p, got)
		}
	}
}

func userTurn(text string) agent.TurnStarted {
	return agent.TurnStarted{Turn: 1, Input: session.UserMessage{Parts: model.Parts{model.Text{Text: text}}}}
}

func scheduledTurn(prompt string) agent.TurnStarted {
	return agent.TurnStarted{Turn: 2, Input: session.UserMessage{Source: session.SourceSchedule, Parts: model.Parts{
		model.Text{Text: prompt}, model.Text{Text: "[Scheduled job 7f3a1b2c, every 30m, fired at 2026-08-11 15:22 CEST.]"}}}}
}

func ended(stop agent.StopReason) agent.TurnEnded {
	return agent.TurnEnded{Result: agent.Result{Stop: stop}}
}

// A job firing at an idle prompt takes it: the half-typed draft is saved,
// and handed back when the turn ends, however it ends, with what was
// typed meanwhile after it and the cursor where it was.
func TestScheduledTurnHandsBackTheDraft(t *testing.T) {
	for _, stop := range []agent.StopReason{agent.StopEndTurn, agent.StopCanceled, agent.StopFailed, agent.StopMaxTokens, agent.StopRefusal, agent.StopMaxTurns} {
		t.Run(string(stop), func(t *testing.T) {
			h := newHarness(t)
			h.typeText("check the deplo")
			h.send(keyCode(tea.KeyLeft), keyCode(tea.KeyLeft)) // cursor inside the word
			h.event(scheduledTurn("look at the deploy"))
			if h.m.comp.value() != "" || !strings.Contains(h.m.status().note, "draft saved") {
				t.Fatalf("composer %q note %q after the fire", h.m.comp.value(), h.m.status().note)
			}
			h.typeText("and the logs") // typed during the turn, not sent
			h.event(agent.TextChunk{Text: "Deploy is green.\n"})
			h.event(ended(stop))
			if got, want := h.m.comp.value(), "check the deplo\nand the logs"; got != want {
				t.Fatalf("composer %q, want %q", got, want)
			}
			if h.m.comp.cursor != len("check the deplo")-2 {
				t.Errorf("cursor %d, want it where it was", h.m.comp.cursor)
			}
			h.wantCommitted("(Scheduled job 7f3a1b2c, every 30m, fired at 2026-08-11 15:22 CEST)", "> look at the deploy", "Deploy is green.")
		})
	}
}

// A key pressed before the fire belongs to the draft, one after it to the
// new composer: both come back, in order.
func TestKeysAroundAFire(t *testing.T) {
	h := newHarness(t)
	h.typeText("ab")
	h.event(scheduledTurn("job"))
	h.typeText("c")
	h.send(keyCode(tea.KeyEnter)) // during the turn: a steer
	if len(h.f.steered) != 1 || h.f.steered[0] != "c" {
		t.Fatalf("steered %q", h.f.steered)
	}
	h.event(ended(agent.StopEndTurn))
	// The steer was never delivered: it comes back too.
	if got := h.m.comp.value(); got != "ab\nc" {
		t.Fatalf("composer %q", got)
	}
}

// Enter during a turn steers; a steer the turn took is committed where it
// was delivered and leaves the pending list.
func TestSteerDelivered(t *testing.T) {
	h := newHarness(t)
	h.typeText("fix it")
	h.send(keyCode(tea.KeyEnter))
	if h.m.submitting != "fix it" {
		t.Fatalf("submitting %q", h.m.submitting)
	}
	h.event(userTurn("fix it"))
	h.typeText("also the logs")
	h.send(keyCode(tea.KeyEnter))
	if len(h.m.steers) != 1 {
		t.Fatalf("pending steers %q", h.m.steers)
	}
	lines, _, _ := h.m.frame()
	if !strings.Contains(strings.Join(lines, "\n"), "steer (goes with the next tool results): also the logs") {
		t.Errorf("live region lacks the pending steer:\n%s", strings.Join(lines, "\n"))
	}
	h.event(agent.UserMessage{Message: session.UserMessage{Source: session.SourceSteer, Parts: model.Parts{model.Text{Text: "also the logs"}}}})
	if len(h.m.steers) != 0 {
		t.Fatalf("delivered steer still pending: %q", h.m.steers)
	}
	h.event(ended(agent.StopEndTurn))
	h.wantCommitted("> fix it", "> also the logs")
	if h.m.comp.value() != "" {
		t.Errorf("composer %q after a delivered steer", h.m.comp.value())
	}
}

// Esc interrupts and hands back the steers and queued prompts the turn
// never took.
func TestEscHandsBackUndeliveredText(t *testing.T) {
	h := newHarness(t)
	h.typeText("long job")
	h.send(keyCode(tea.KeyEnter))
	h.event(userTurn("long job"))
	h.typeText("steer one")
	h.send(keyCode(tea.KeyEnter))
	h.typeText("after it")
	h.send(keyCode(tea.KeyTab)) // queued for after the turn
	h.send(keyCode(tea.KeyEsc))
	if h.f.canceled != 1 {
		t.Fatalf("Cancel called %d times", h.f.canceled)
	}
	h.event(ended(agent.StopCanceled))
	if got := h.m.comp.value(); got != "steer one\nafter it" {
		t.Fatalf("composer %q", got)
	}
	h.wantCommitted("(interrupted)")
	if len(h.m.queued) != 0 || h.m.submitting != "" {
		t.Errorf("queued %q submitting %q after an interrupt", h.m.queued, h.m.submitting)
	}
}

// A typed prompt that loses the race to a job's turn waits for it and
// then runs; nothing is dropped.
func TestBusyPromptRunsAfterTheTurn(t *testing.T) {
	h := newHarness(t)
	h.typeText("mine")
	h.send(keyCode(tea.KeyEnter))
	h.event(scheduledTurn("job"))
	h.send(runDoneMsg{text: "mine", err: agent.ErrBusy})
	if len(h.m.queued) != 1 {
		t.Fatalf("queued %q", h.m.queued)
	}
	h.event(ended(agent.StopEndTurn))
	if h.m.submitting != "mine" {
		t.Fatalf("the queued prompt did not start: submitting %q", h.m.submitting)
	}
}

// A prompt the session refuses outright comes back to the composer.
func TestFailedSendGivesTextBack(t *testing.T) {
	h := newHarness(t)
	h.typeText("hello")
	h.send(keyCode(tea.KeyEnter))
	h.send(runDoneMsg{text: "hello", err: errors.New("session is closed")})
	if h.m.comp.value() != "hello" {
		t.Fatalf("composer %q", h.m.comp.value())
	}
	h.wantCommitted("Not sent: session is closed")
}

// Ctrl+C: interrupt a turn, else clear a draft (kept in history), else arm
// quitting; a second one within the window quits, one after it re-arms.
func TestCtrlCOrder(t *testing.T) {
	h := newHarness(t)
	ctrlC := keyMod('c', tea.ModCtrl)
	h.typeText("draft")
	h.send(ctrlC)
	if h.m.comp.value() != "" || h.m.quitting {
		t.Fatalf("draft %q quitting %v", h.m.comp.value(), h.m.quitting)
	}
	h.send(keyCode(tea.KeyUp))
	if h.m.comp.value() != "draft" {
		t.Fatalf("history gave %q", h.m.comp.value())
	}
	h.send(ctrlC) // clears again
	h.send(ctrlC) // arms
	if h.m.quitting || !h.m.status().quitArmed {
		t.Fatal("first Ctrl+C on an empty prompt did not arm")
	}
	h.clk.add(2 * time.Second)
	h.send(ctrlC) // the window passed: arms again
	if h.m.quitting {
		t.Fatal("quit outside the window")
	}
	h.clk.add(500 * time.Millisecond)
	h.send(ctrlC)
	if !h.m.quitting {
		t.Fatal("second Ctrl+C did not quit")
	}

	h = newHarness(t)
	h.event(userTurn("x"))
	h.send(ctrlC)
	if h.f.canceled != 1 || h.m.quitting {
		t.Fatalf("during a turn: canceled %d quitting %v", h.f.canceled, h.m.quitting)
	}
}

// Shift+Tab cycles the enabled levels at or below the one the session
// started at, writing each through the session; a refused change says so.
// Going higher takes /permission and a y.
func TestShiftTabCyclesLevels(t *testing.T) {
	h := newHarness(t) // starts at workspace; unrestricted is enabled
	shiftTab := keyMod(tea.KeyTab, tea.ModShift)
	var got []permission.Level
	h.f.setLevel = func(l permission.Level) error { got = append(got, l); return nil }
	h.send(shiftTab, shiftTab, shiftTab)
	want := []permission.Level{permission.Read, permission.Workspace, permission.Read}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("levels %v, want %v", got, want)
	}
	h.wantCommitted("(permission: read)", "(permission: workspace)")
	if strings.Contains(h.committed(), "unrestricted") {
		t.Fatalf("Shift+Tab reached unrestricted:\n%s", h.committed())
	}
	h.f.setLevel = func(permission.Level) error { return errors.New("database is locked") }
	h.send(shiftTab)
	h.wantCommitted("(! permission unchanged: database is locked)")
	h.f.setLevel = func(l permission.Level) error { got = append(got, l); return nil }

	// Above the start: asked, and any key but y keeps the level.
	got = nil
	h.submitText("/permission unrestricted")
	h.wantCommitted("Raise the permission to unrestricted, above the workspace this session started at?")
	h.send(keyText("n"))
	if len(got) != 0 || h.f.Level() != permission.Read {
		t.Fatalf("declined raise set %v, level %s", got, h.f.Level())
	}
	h.wantCommitted("(permission unchanged: read)")
	h.submitText("/permission unrestricted")
	h.send(keyText("y"))
	if h.f.Level() != permission.Unrestricted {
		t.Fatalf("confirmed raise: level %s", h.f.Level())
	}
	// Now the cycle reaches it.
	got = nil
	h.send(shiftTab, shiftTab, shiftTab)
	if want := []permission.Level{permission.Read, permission.Workspace, permission.Unrestricted}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after the raise: %v, want %v", got, want)
	}
	// At or below the ceiling, /permission needs no question.
	got = nil
	h.submitText("/permission read")
	if fmt.Sprint(got) != "[read]" {
		t.Fatalf("/permission read: %v", got)
	}
}

// Slash commands never reach the model by accident: /quit and /exit
// quit, an unknown /word is answered here with the nearest name, /clear
// starts a new session and names the old one; a path is a prompt.
func TestSlashCommandsStayLocal(t *testing.T) {
	for _, cmd := range []string{"/quit", "/exit"} {
		h := newHarness(t)
		var runs int
		h.f.run = func(context.Context, session.UserMessage) (agent.Result, error) { runs++; return agent.Result{}, nil }
		h.submitText(cmd)
		if !h.m.quitting || runs != 0 {
			t.Fatalf("%s: quitting %v, %d turns", cmd, h.m.quitting, runs)
		}
	}

	h := newHarness(t)
	var sent []string
	h.f.run = func(_ context.Context, msg session.UserMessage) (agent.Result, error) {
		sent = append(sent, messageText(msg.Parts))
		return agent.Result{Stop: agent.StopEndTurn}, nil
	}
	h.submitText("/stauts")
	h.wantCommitted("unknown command /stauts (did you mean /status?); nothing was sent. /help lists the commands")
	h.submitText("/frobnicate now")
	h.wantCommitted("unknown command /frobnicate; nothing was sent")
	if len(sent) != 0 {
		t.Fatalf("sent %q", sent)
	}
	// A path, and a line starting with a space, are prompts.
	for _, text := range []string{"/etc/hosts is odd", " /stauts"} {
		if cmd := h.m.submit(text); cmd != nil {
			runMsgs(h, cmd)
		}
	}
	if len(sent) != 2 {
		t.Fatalf("sent %q, want the path and the spaced line", sent)
	}

	// /clear: a new, unopened session; the old one is named and let go.
	h = newHarness(t)
	h.f.id = "0b5c1e2a-0000-4000-8000-000000000000"
	h.m.hold(h.f)
	var opened int
	h.m.opts.NewSession = func(context.Context, permission.Level) (Session, error) { opened++; return newFake(), nil }
	h.submitText("/clear")
	h.wantCommitted("New session: it starts with your next message. The previous one is 0b5c1e2a: meka -r 0b5c1e2a resumes it")
	if h.m.sess.ID() != "" || opened != 0 || !h.f.closed {
		t.Fatalf("after /clear: session %q, opened %d, old closed %v", h.m.sess.ID(), opened, h.f.closed)
	}
}

// Ctrl+D on an empty composer arms quitting like Ctrl+C; with text it
// deletes forward.
func TestCtrlDQuits(t *testing.T) {
	h := newHarness(t)
	ctrlD := keyMod('d', tea.ModCtrl)
	h.typeText("ab")
	h.send(keyCode(tea.KeyLeft), ctrlD)
	if h.m.comp.value() != "a" || !h.m.quitAt.IsZero() {
		t.Fatalf("Ctrl+D with text: %q armed %v", h.m.comp.value(), !h.m.quitAt.IsZero())
	}
	h.send(keyCode(tea.KeyBackspace), ctrlD)
	if h.m.quitting || !h.m.status().quitArmed || !strings.Contains(statusLine(h.m.st, h.m.status(), 80), "ctrl+d again to quit") {
		t.Fatalf("first Ctrl+D: quitting %v, status %q", h.m.quitting, statusLine(h.m.st, h.m.status(), 80))
	}
	h.send(ctrlD)
	if !h.m.quitting {
		t.Fatal("second Ctrl+D did not quit")
	}
}

// /profile and /cd are refused while a turn runs, in the host's words,
// and the text stays in the composer; /status answers at once.
func TestCommandsDuringATurn(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("x"))
	h.typeText("/profile sonnet")
	h.send(keyCode(tea.KeyEnter))
	h.wantCommitted("cannot switch profile while a turn is in flight; cancel it first")
	if h.m.comp.value() != "/profile sonnet" {
		t.Errorf("composer %q", h.m.comp.value())
	}
	h.m.comp.clear()
	h.typeText("/status")
	h.send(keyCode(tea.KeyEnter))
	h.wantCommitted("Permission: workspace", "Profile: opus", "no model call")
	h.typeText("/compact")
	h.send(keyCode(tea.KeyEnter))
	if len(h.m.queued) != 1 || h.m.queued[0] != "/compact" {
		t.Fatalf("queued %q", h.m.queued)
	}
	if len(h.f.steered) != 0 {
		t.Fatalf("a command was steered to the model: %q", h.f.steered)
	}
}

func TestSlashGrammar(t *testing.T) {
	cases := []struct {
		text, name, args string
		local            bool
	}{
		{"/status", "status", "", true},
		{"  /schedule show 7f3a ", "schedule", "show 7f3a", true},
		{"/usage why?", "usage", "why?", true},
		{"/etc/hosts", "", "", false},
		{"//x", "", "", false},
		{"/unknown thing", "", "", false},
		{"status", "", "", false},
		{"/status\nand more", "status", "and more", true},
	}
	for _, c := range cases {
		name, args, ok := parseCommand(c.text)
		if ok != c.local || name != c.name || args != c.args {
			t.Errorf("parseCommand(%q) = %q %q %v, want %q %q %v", c.text, name, args, ok, c.name, c.args, c.local)
		}
	}
}

// An unknown slash word goes to the model as typed.
func TestUnknownSlashGoesToTheModel(t *testing.T) {
	h := newHarness(t)
	h.typeText("/etc/hosts is odd")
	h.send(keyCode(tea.KeyEnter))
	if h.m.submitting != "/etc/hosts is odd" {
		t.Fatalf("submitting %q", h.m.submitting)
	}
}

// The approval pane ignores keys until typing has been quiet: a key in
// flight when it opens cannot answer it. The answer is one line.
func TestApprovalGrace(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("write it"))
	h.typeText("dra")
	a := &approval{tool: "file_write", title: "file_write main.go", args: "{}", reply: make(chan permission.Decision, 1)}
	h.clk.add(100 * time.Millisecond)
	h.send(askMsg{a: a})
	h.clk.add(100 * time.Millisecond)
	h.send(keyText("a")) // still typing: ignored, and counts as typing
	h.clk.add(350 * time.Millisecond)
	h.send(keyText("a")) // 350 ms after the last key: still ignored
	select {
	case d := <-a.reply:
		t.Fatalf("answered %v during the grace", d)
	default:
	}
	if h.m.armedIn() == 0 {
		t.Fatal("armed while keys were not quiet")
	}
	h.clk.add(500 * time.Millisecond)
	h.send(keyText("A"))
	if d := <-a.reply; d != permission.AlwaysAllow {
		t.Fatalf("decision %v", d)
	}
	h.wantCommitted("(file_write always allowed)")
	if h.m.comp.value() != "dra" {
		t.Errorf("the draft changed under the pane: %q", h.m.comp.value())
	}
}

// Keys that never stop still arm the pane 1.5 s after it opened.
func TestApprovalGraceCap(t *testing.T) {
	h := newHarness(t)
	a := &approval{tool: "shell_execute", title: "go test", reply: make(chan permission.Decision, 1)}
	h.send(askMsg{a: a})
	for range 8 {
		h.clk.add(200 * time.Millisecond)
		h.send(keyText("x"))
	}
	h.send(keyText("d"))
	if d := <-a.reply; d != permission.Deny {
		t.Fatalf("decision %v", d)
	}
	h.wantCommitted("(shell_execute denied)")
}

// The checklist is pinned while it has open items; scrollback gets a
// snapshot once per round; nudges are stage directions.
func TestChecklistAndNudges(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("build a parser"))
	h.event(plan.Changed{Dialect: "checklist", Total: 3, Completed: 1, Items: []plan.Item{
		{Text: "write the query", Status: plan.InProgress},
		{Text: "verify the numbers", Status: plan.Pending},
		{Text: "ask Ana", Status: plan.Deferred, Reason: "waiting on her reply"},
		{Text: "read the spec", Status: plan.Completed},
	}})
	lines, _, _ := h.m.frame()
	live := strings.Join(lines, "\n")
	for _, want := range []string{"Checklist  › write the query", "□ verify the numbers", "» ask Ana — waiting on her reply", "(1 done)"} {
		if !strings.Contains(live, want) {
			t.Errorf("live region lacks %q:\n%s", want, live)
		}
	}
	if strings.Contains(live, "read the spec") {
		t.Error("a completed item is pinned")
	}
	h.event(agent.TextChunk{Text: "All done."})
	h.event(agent.Notice{Notice: session.Notice{Severity: session.SeverityInfo, Title: "Checklist: 2 open items, continuing, nudge 1 of 3"}})
	h.wantCommitted("All done.", "(Checklist: 2 open items, continuing, nudge 1 of 3)", "Checklist  › write the query")
	if n := strings.Count(h.committed(), "Checklist  ›"); n != 1 {
		t.Errorf("%d snapshots, want 1 per change", n)
	}
}

// Reply text is committed a block at a time; a fence keeps its blank
// lines inside one block; the unfinished block stays live.
func TestReplyBlocks(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("x"))
	h.event(agent.TextChunk{Text: "First para"})
	h.event(agent.TextChunk{Text: "graph.\n\n```go\nfunc a() {}\n\nfunc b() {}\n"})
	if strings.Contains(h.committed(), "func a") {
		t.Fatal("an open fence was committed")
	}
	h.wantCommitted("First paragraph.")
	h.event(agent.TextChunk{Text: "```\n\nTail"})
	h.wantCommitted("func a() {}\n\nfunc b() {}")
	lines, _, _ := h.m.frame()
	if !strings.Contains(strings.Join(lines, "\n"), "Tail") || strings.Contains(h.committed(), "Tail") {
		t.Error("the unfinished block is not live only")
	}
	h.event(ended(agent.StopEndTurn))
	h.wantCommitted("Tail")
}

// A running call shows its last lines live; its finished card is
// committed bounded; one still running at the turn's end is closed as
// interrupted.
func TestToolCards(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("x"))
	h.event(agent.ToolCallStarted{CallID: "c1", Name: "shell_execute", Title: "go test ./..."})
	var out strings.Builder
	for i := range 20 {
		out.WriteString("line " + string(rune('a'+i)) + "\n")
	}
	h.event(agent.ToolCallOutput{CallID: "c1", Chunk: out.String()})
	lines, _, _ := h.m.frame()
	live := strings.Join(lines, "\n")
	if !strings.Contains(live, "◐ go test ./...") || !strings.Contains(live, "line t") || strings.Contains(live, "line o\n") {
		t.Errorf("live tool block:\n%s", live)
	}
	h.clk.add(2100 * time.Millisecond)
	h.event(agent.ToolCallFinished{CallID: "c1", Result: session.ToolResult{CallID: "c1", Name: "shell_execute", Status: session.StatusOK,
		Content: model.Parts{model.Text{Text: out.String()}}}})
	h.wantCommitted("✓ go test ./...  2.1s", "line a", "… +12 lines", "line t")
	h.event(agent.ToolCallStarted{CallID: "c2", Name: "shell_execute", Title: "sleep 100"})
	h.event(ended(agent.StopCanceled))
	h.wantCommitted("✗ sleep 100", "interrupted")
	if len(h.m.calls) != 0 {
		t.Error("a call outlived its turn")
	}
}

// The live region never grows past the window, whatever it holds.
func TestLiveRegionBounded(t *testing.T) {
	h := newHarness(t)
	h.m.height = 10
	h.event(userTurn("x"))
	for i := range 6 {
		id := string(rune('a' + i))
		h.event(agent.ToolCallStarted{CallID: id, Name: "shell_execute", Title: "cmd " + id})
		h.event(agent.ToolCallOutput{CallID: id, Chunk: "1\n2\n3\n4\n5\n6\n"})
	}
	h.typeText("a\nb\nc")
	lines, row, _ := h.m.frame()
	if len(lines) > 9 {
		t.Fatalf("%d lines in a 10-line window", len(lines))
	}
	if row < 0 || row >= len(lines) || !strings.HasPrefix(lines[row], "  c") {
		t.Fatalf("cursor row %d in %q", row, lines)
	}
}

// A running sub-agent's progress replaces what its call shows.
func TestSubAgentProgress(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("x"))
	h.event(agent.ToolCallStarted{CallID: "s1", Name: "agent_run", Title: "agent_run explorer"})
	h.event(agent.ToolCallProgress{CallID: "s1", Lines: []string{"✓ file_read a.go", "◐ grep TODO"}})
	h.event(agent.ToolCallProgress{CallID: "s1", Lines: []string{"✓ grep TODO"}})
	lines, _, _ := h.m.frame()
	live := strings.Join(lines, "\n")
	if !strings.Contains(live, "◐ agent_run explorer") || !strings.Contains(live, "✓ grep TODO") || strings.Contains(live, "file_read") {
		t.Fatalf("live region:\n%s", live)
	}
}

type fakeMCP struct{ rendered []string }

func (f *fakeMCP) MCPReport() string { return "MCP servers:\n- deploy: connected, 2 tools, 1 prompt" }
func (f *fakeMCP) MCPPrompts() []host.MCPPrompt {
	return []host.MCPPrompt{{Name: "release-notes", Description: "Draft release notes", Hint: "version"}}
}
func (f *fakeMCP) RenderMCPPrompt(_ context.Context, name, input string) (string, error) {
	f.rendered = append(f.rendered, name+" "+input)
	return "Write the release notes for version " + input + ".", nil
}

// An MCP prompt runs as a slash command: rendered by the host, sent as
// the user's message, shown as a stage direction and the words typed.
// /mcp prints the host's report.
func TestMCPPromptAndReport(t *testing.T) {
	h := newHarness(t)
	mcp := &fakeMCP{}
	h.m.opts.MCP = mcp
	h.typeText("/mcp")
	h.send(keyCode(tea.KeyEnter))
	h.wantCommitted("- deploy: connected, 2 tools, 1 prompt")
	h.typeText("/rele") // "/rel" is also /reload
	h.send(keyCode(tea.KeyTab))
	if h.m.comp.value() != "/release-notes " {
		t.Fatalf("completion %q", h.m.comp.value())
	}
	h.typeText("1.4")
	h.send(keyCode(tea.KeyEnter))
	var cmdMsg tea.Msg
	// The render runs off the screen's goroutine; here it is called
	// directly.
	cmdMsg = h.m.runMCPPrompt("release-notes", "1.4", "/release-notes 1.4")()
	h.send(cmdMsg)
	if h.m.submitting != "Write the release notes for version 1.4." {
		t.Fatalf("submitting %q", h.m.submitting)
	}
	h.event(userTurn("Write the release notes for version 1.4."))
	h.wantCommitted("(MCP prompt release-notes)", "> /release-notes 1.4")
	if strings.Contains(h.committed(), "> Write the release notes") {
		t.Error("the rendered prompt was shown as typed")
	}
}

// memFake is a session that keeps memories and reloads its prompt.
type memFake struct {
	*fakeSession
	reloads int
}

func (f *memFake) Memories(context.Context) (string, error) {
	return "Memories (project meka), newest first:\n- m2: the CI needs Node 20\n- m1: run go vet", nil
}

func (f *memFake) Reload(context.Context) (Session, error) {
	f.reloads++
	return f, nil
}

// /memories prints what the session sees; /reload reopens it with its
// prompt built again; a session without them says so.
func TestMemoriesAndReload(t *testing.T) {
	h := newHarness(t)
	h.typeText("/memories")
	h.send(keyCode(tea.KeyEnter))
	h.wantCommitted("This session keeps no memories.")

	mf := &memFake{fakeSession: h.f}
	h.m.hold(mf)
	h.typeText("/memories")
	h.send(keyCode(tea.KeyEnter))
	h.wantCommitted("- m2: the CI needs Node 20", "- m1: run go vet")

	lines, cmd := h.m.runCommand("reload", "")
	if len(lines) != 0 || cmd == nil {
		t.Fatalf("/reload: %q %v", lines, cmd)
	}
	h.send(cmd())
	if mf.reloads != 1 {
		t.Fatalf("reloads %d", mf.reloads)
	}
}

// Ctrl+L redraws; Ctrl+O pages the last tool's output (or says there is
// none); an approval rings only while the terminal is not focused.
func TestRedrawPagerAndBell(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // the page's file, left by a pager never run
	h := newHarness(t)
	if cmd := h.m.key(tea.KeyPressMsg{Code: 'l', Mod: tea.ModCtrl}); cmd == nil || fmt.Sprintf("%T", cmd()) != "tea.clearScreenMsg" {
		t.Error("ctrl+l does not clear the screen")
	}
	if cmd := h.m.key(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}); cmd != nil {
		t.Error("ctrl+o without output runs something")
	}
	h.wantCommitted("(no tool output yet)")
	h.event(userTurn("read it"))
	h.event(agent.ToolCallStarted{CallID: "c1", Name: "file_read", Title: "file_read a.go"})
	h.event(agent.ToolCallFinished{CallID: "c1", Result: session.ToolResult{CallID: "c1", Name: "file_read", Status: session.StatusOK,
		Content: model.Parts{model.Text{Text: "package a\nfunc A() {}"}}}})
	if !strings.Contains(h.m.lastOutput, "package a") {
		t.Fatalf("last output %q", h.m.lastOutput)
	}
	if cmd := h.m.key(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}); cmd == nil {
		t.Error("ctrl+o with output runs no pager")
	}

	a := &approval{tool: "file_write", title: "file_write main.go", args: "{}", reply: make(chan permission.Decision, 1)}
	if h.m.ring(a) != nil {
		t.Error("rang while focused")
	}
	h.send(tea.BlurMsg{})
	if cmd := h.m.ring(a); cmd == nil || !strings.Contains(fmt.Sprint(cmd()), "file_write main.go needs an answer") {
		t.Error("no bell while the terminal is not focused")
	}
	h.send(tea.FocusMsg{})
	if h.m.ring(a) != nil {
		t.Error("rang after focus came back")
	}
}

// An MCP server's request for input is said in scrollback and answered
// in the composer: a form with name=value (or JSON), Esc declining.
func TestElicitationInTheComposer(t *testing.T) {
	h := newHarness(t)
	sent := make(chan tea.Msg, 4)
	h.m.send = func(msg tea.Msg) { sent <- msg }
	ask := func(e host.Elicitation) chan host.ElicitResult {
		out := make(chan host.ElicitResult, 1)
		go func() {
			r, _ := h.m.elicit(t.Context(), e)
			out <- r
		}()
		h.send(<-sent)
		return out
	}
	res := ask(host.Elicitation{Server: "crm", Mode: host.ElicitForm, Message: "Who are you?",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"number"}}}`)})
	h.wantCommitted("MCP server crm asks: Who are you?", "Fields: age (number), name (string)")
	h.send(keyCode(tea.KeyEnter)) // nothing typed: said, not sent
	h.wantCommitted("type an answer, or Esc to decline")
	h.typeText("name=Ada")
	h.send(keyCode(tea.KeyEnter))
	if r := <-res; r.Action != host.ElicitAccept || r.Content["name"] != "Ada" {
		t.Fatalf("answer %+v", r)
	}
	if h.m.comp.value() != "" || len(h.m.elicits) != 0 {
		t.Fatalf("composer %q, open %d", h.m.comp.value(), len(h.m.elicits))
	}
	res = ask(host.Elicitation{Server: "crm", Mode: host.ElicitURL, Message: "Sign in", URL: "https://crm.example/login"})
	h.wantCommitted("Open https://crm.example/login")
	h.send(keyCode(tea.KeyEscape))
	if r := <-res; r.Action != host.ElicitDecline {
		t.Fatalf("esc %+v", r)
	}
	// With nothing open, Enter is a prompt again.
	h.typeText("hello")
	h.send(keyCode(tea.KeyEnter))
	if h.m.submitting != "hello" {
		t.Fatalf("submitting %q", h.m.submitting)
	}
}

// The status line carries the session's cost: what the log held when the
// session was taken up, sub-agents included, then the live turn's.
func TestStatusLineCost(t *testing.T) {
	f := newFake()
	f.rows = []session.Row{
		{Turn: 1, Entry: session.AssistantMessage{Usage: model.Usage{Cost: 0.5}}},
		{Turn: 1, Entry: session.ToolResult{Name: "agent_run", Usage: model.Usage{Cost: 0.25}}},
	}
	m := newScreen(t.Context(), f, Options{Width: 100, Height: 20, Now: newClock().now})
	m.hold(f)
	if got := m.status().cost; got != 0.75 {
		t.Fatalf("cost on taking the session up: %v, want 0.75", got)
	}
	m.Update(eventMsg{sid: f.id, ev: userTurn("x")})
	m.Update(eventMsg{sid: f.id, ev: agent.Usage{Turn: model.Usage{Cost: 0.125}}})
	if got := m.status().cost; got != 0.875 {
		t.Fatalf("cost during a turn: %v, want 0.875", got)
	}
	if !strings.Contains(statusLine(styles{}, m.status(), 100), "$0.8750") {
		t.Errorf("status line %q lacks the cost", statusLine(styles{}, m.status(), 100))
	}
	f.rows = append(f.rows, session.Row{Turn: 2, Entry: session.AssistantMessage{Usage: model.Usage{Cost: 0.125}}})
	m.Update(eventMsg{sid: f.id, ev: ended(agent.StopEndTurn)})
	if got := m.status().cost; got != 0.875 {
		t.Fatalf("cost after the turn: %v, want 0.875", got)
	}
}

// A rate limit running low shows on the status line.
func TestStatusLineRateLimit(t *testing.T) {
	h := newHarness(t)
	h.event(userTurn("x"))
	h.event(agent.RateLimit{Limit: model.RateLimit{Tokens: model.Limit{Limit: 100, Remaining: 80}, Requests: model.Limit{Limit: -1, Remaining: -1}}})
	if s := h.m.status(); s.limit != "" {
		t.Fatalf("shown at 80%%: %q", s.limit)
	}
	h.event(agent.RateLimit{Limit: model.RateLimit{Tokens: model.Limit{Limit: 100, Remaining: 8}, Requests: model.Limit{Limit: -1, Remaining: -1}}})
	if line := statusLine(styles{}, h.m.status(), 100); !strings.Contains(line, "tokens 8% left") {
		t.Fatalf("status line %q", line)
	}
}
