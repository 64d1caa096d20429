package repl

import (
	"context"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// Timings of the keys.
const (
	quitWindow   = time.Second            // a second Ctrl+C within it quits
	graceQuiet   = 400 * time.Millisecond // an approval pane arms once keys were quiet this long
	graceMax     = 1500 * time.Millisecond
	outputWindow = 8 << 10 // trailing live output kept per running call
)

// Messages the screen's goroutine receives besides keys.
type (
	// eventMsg is a session event, tagged with the session it came from so
	// that a session the screen has let go of cannot draw.
	eventMsg struct {
		sid string
		ev  agent.Event
	}
	// askMsg is an approval request; the turn waits on reply.
	askMsg struct{ a *approval }
	// askGoneMsg closes a request whose turn stopped waiting.
	askGoneMsg struct{ a *approval }
	// runDoneMsg is the end of a Run the screen started.
	runDoneMsg struct {
		text string
		err  error
	}
	// openedMsg is a session a first message created.
	openedMsg struct {
		s    Session
		text string
		err  error
	}
	// renderedMsg is an MCP prompt's text, ready to send.
	renderedMsg struct {
		name, typed, text string
		err               error
	}
	printedMsg    struct{}
	firstFrameMsg struct{}
	tickMsg       struct{}
	// doneMsg is the answer of a slash command that ran off the screen's
	// goroutine; next, when set, is the session to hold from now on.
	doneMsg struct {
		lines   []string
		next    Session
		compose string
	}
)

type answer int

const (
	answerAllow answer = iota
	answerAlwaysAllow
	answerDeny
	answerAlwaysDeny
)

func (a answer) decision() permission.Decision {
	return [...]permission.Decision{permission.Allow, permission.AlwaysAllow, permission.Deny, permission.AlwaysDeny}[a]
}

// approval is one pending request.
type approval struct {
	tool, title, args, agent string
	reply                    chan permission.Decision
	opened                   time.Time
	choice                   int
}

// liveCall is a tool call the live region shows while it runs.
type liveCall struct {
	id string
	card
	started time.Time
}

// screen is the bubbletea model. Everything committed to scrollback leaves
// it, so a frame costs what the live region holds, never the session.
type screen struct {
	ctx   context.Context
	opts  Options
	sess  Session
	st    styles
	now   func() time.Time
	send  func(tea.Msg) // set once the program exists
	unsub func()        // the held session's subscription

	width, height int

	comp    composer
	lastKey time.Time
	quitAt  time.Time // when Ctrl+C armed quitting; zero when not armed
	quitKey string    // the key that armed it
	// ceiling is the highest level Shift+Tab reaches: the session's level
	// when the screen took it, raised only by a confirmed /permission.
	ceiling permission.Level
	// confirm is a level /permission asked for above the ceiling, waiting
	// for y.
	confirm *permission.Level

	busy       bool // a turn runs (TurnStarted seen, TurnEnded not yet)
	submitting string
	shown      string // what to show for the next typed turn's prompt, when not its text (an MCP prompt)
	ours       bool   // the running turn is one the screen started
	turnStart  time.Time
	interrupt  bool           // the user asked the running turn to stop
	blurred    bool           // the terminal reported losing focus
	elicits    []*elicitation // MCP requests for input, oldest first
	lastOutput string         // the last finished tool's output, for Ctrl+O

	block      []string // completed lines of the reply's unfinished block
	partial    string   // the reply's unfinished line
	inFence    bool
	thinkStart time.Time
	compacting time.Time
	calls      []*liveCall
	plan       plan.Changed
	planDirty  bool
	ctxPercent int
	spent      float64 // the session's cost before this turn, sub-agents included
	turnCost   float64 // this turn's so far
	limit      string  // the rate limit, when low

	steers []string // sent mid-turn, not yet delivered
	queued []string // to send once the turn ends
	stash  *draft   // the draft a turn the screen did not start took over
	asks   []*approval
	note   string

	outbox   []string
	printing bool
	ready    bool // the first frame is out: commits may print
	quitting bool
}

func newScreen(ctx context.Context, s Session, opts Options) *screen {
	m := &screen{ctx: ctx, opts: opts, sess: s, st: styles{color: opts.Color}, now: opts.Now,
		width: opts.Width, height: opts.Height, ctxPercent: -1}
	if m.width <= 0 {
		m.width = 80
	}
	if m.height <= 0 {
		m.height = 24
	}
	if m.send == nil {
		m.send = func(tea.Msg) {}
	}
	m.ceiling = s.Level()
	return m
}

func (m *screen) Init() tea.Cmd { return nil }

func (m *screen) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		if msg.Width > 0 && msg.Height > 0 {
			m.width, m.height = msg.Width, max(msg.Height, 2)
		}
	case firstFrameMsg:
		m.ready = true
		if p := strings.TrimSpace(m.opts.FirstPrompt); p != "" {
			m.opts.FirstPrompt = ""
			cmds = append(cmds, m.submit(p))
		}
	case printedMsg:
		m.printing = false
	case tickMsg:
	case tea.KeyPressMsg:
		cmds = append(cmds, m.key(msg))
	case tea.PasteMsg:
		m.lastKey = m.now()
		if len(m.asks) == 0 {
			m.comp.insert(msg.Content)
		}
	case eventMsg:
		if msg.sid == m.sess.ID() {
			cmds = append(cmds, m.event(msg.ev))
		}
	case askMsg:
		m.endReply() // what was said before the question stays above it
		msg.a.opened = m.now()
		m.asks = append(m.asks, msg.a)
		cmds = append(cmds, m.ring(msg.a))
	case elicitMsg:
		cmds = append(cmds, m.openElicit(msg.el))
	case elicitGoneMsg:
		m.dropElicit(msg.el)
	case tea.FocusMsg:
		m.blurred = false
	case tea.BlurMsg:
		m.blurred = true
	case askGoneMsg:
		m.dropAsk(msg.a)
	case openedMsg:
		cmds = append(cmds, m.opened(msg))
	case renderedMsg:
		cmds = append(cmds, m.rendered(msg))
	case runDoneMsg:
		cmds = append(cmds, m.runDone(msg))
	case doneMsg:
		cmds = append(cmds, m.commandDone(msg))
	}
	cmds = append(cmds, m.flush(), m.tick())
	return m, tea.Batch(cmds...)
}

// commit queues finished lines for scrollback.
func (m *screen) commit(lines ...string) { m.outbox = append(m.outbox, lines...) }

// flush prints the outbox: one print in flight at a time, so commits
// arrive in order and quitting waits for the last of them. Nothing prints
// before the first frame, which would lose lines.
func (m *screen) flush() tea.Cmd {
	if !m.ready || m.printing {
		return nil
	}
	if len(m.outbox) == 0 {
		if m.quitting {
			return tea.Quit
		}
		return nil
	}
	batch := strings.Join(m.outbox, "\n")
	m.outbox = nil
	m.printing = true
	return tea.Sequence(tea.Println(batch), func() tea.Msg { return printedMsg{} })
}

// tick redraws while something on screen counts time.
func (m *screen) tick() tea.Cmd {
	if !m.busy && len(m.asks) == 0 && m.quitAt.IsZero() {
		return nil
	}
	return tea.Tick(250*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

// ring is the bell, and a desktop notification where the terminal takes
// OSC 9, for an approval opened while the terminal is not focused.
func (m *screen) ring(a *approval) tea.Cmd {
	if !m.blurred {
		return nil
	}
	return tea.Raw("\a\x1b]9;meka: " + oneLine(a.title) + " needs an answer\x07")
}

// submit sends text: a local command, a steer during a turn, else a turn.
func (m *screen) submit(text string) tea.Cmd {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	m.comp.remember(text)
	if name, args, ok := parseCommand(text); ok {
		return m.command(name, args, text)
	}
	if name, input, ok := m.mcpPrompt(text); ok {
		return m.runMCPPrompt(name, input, text)
	}
	known := knownCommands(m.sess, m.opts.MCP)
	if word, ok := unknownCommand(text, known); ok {
		// Answered here: a typo never becomes a billed turn.
		m.commit(m.st.dim("> " + oneLine(text)))
		m.commit(direction(m.st, session.Notice{Severity: session.SeverityWarning, Title: unknownText(word, known)}, m.width)...)
		return nil
	}
	if m.busy || m.submitting != "" {
		if m.busy && m.sess.Steer(model.Text{Text: text}) {
			m.steers = append(m.steers, text)
			return nil
		}
		m.queued = append(m.queued, text)
		return nil
	}
	return m.start(text)
}

// start runs a typed turn.
func (m *screen) start(text string) tea.Cmd {
	m.submitting = text
	s, ctx := m.sess, m.ctx
	if _, ok := s.(*unopened); ok {
		// The first message creates the session.
		return func() tea.Msg {
			n, err := create(ctx, s)
			return openedMsg{s: n, text: text, err: err}
		}
	}
	return runCmd(ctx, s, text)
}

// opened holds the session a first message created and sends it.
func (m *screen) opened(msg openedMsg) tea.Cmd {
	if msg.err != nil {
		m.submitting = ""
		m.commit(direction(m.st, session.Notice{Severity: session.SeverityError, Title: "Not sent: " + msg.err.Error()}, m.width)...)
		m.giveBack(msg.text)
		return nil
	}
	m.hold(msg.s)
	return runCmd(m.ctx, msg.s, msg.text)
}

func runCmd(ctx context.Context, s Session, text string) tea.Cmd {
	return runMessage(ctx, s, text, session.UserMessage{Parts: model.Parts{model.Text{Text: text}}})
}

func runMessage(ctx context.Context, s Session, text string, msg session.UserMessage) tea.Cmd {
	return func() tea.Msg {
		_, err := s.Run(ctx, msg)
		return runDoneMsg{text: text, err: err}
	}
}

// startMessage runs a turn whose message the screen made (/plan pick):
// its text is what the composer gets back if it is not sent.
func (m *screen) startMessage(msg session.UserMessage) tea.Cmd {
	text := messageText(msg.Parts)
	m.submitting = text
	return runMessage(m.ctx, m.sess, text, msg)
}

func (m *screen) runDone(msg runDoneMsg) tea.Cmd {
	if m.submitting != msg.text {
		return nil // its TurnStarted came; TurnEnded said how it ended
	}
	m.submitting = ""
	if isBusy(msg.err) {
		// Another turn took the session first: this one runs after it.
		m.queued = append([]string{msg.text}, m.queued...)
		return nil
	}
	if msg.err != nil {
		m.commit(direction(m.st, session.Notice{Severity: session.SeverityError, Title: "Not sent: " + msg.err.Error()}, m.width)...)
		m.giveBack(msg.text)
	}
	return nil
}

// giveBack puts text the session did not take into the composer, after
// what is there.
func (m *screen) giveBack(texts ...string) {
	for _, t := range texts {
		if t == "" {
			continue
		}
		if len(m.comp.text) == 0 {
			m.comp.set(t)
			continue
		}
		// Appended; the cursor stays where the user left it.
		m.comp.text = append(m.comp.text, []rune("\n"+t)...)
	}
}

// interruptTurn asks the running turn to stop; TurnEnded hands back what
// it did not take.
func (m *screen) interruptTurn() {
	m.interrupt = true
	m.note = "interrupting…"
	m.sess.Cancel()
}

func (m *screen) dropAsk(a *approval) {
	for i, x := range m.asks {
		if x == a {
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			if i == 0 && len(m.asks) > 0 {
				m.asks[0].opened = m.now()
			}
			return
		}
	}
}

// armedIn is how long until the front approval takes keys; 0 once armed.
func (m *screen) armedIn() time.Duration {
	if len(m.asks) == 0 {
		return 0
	}
	a := m.asks[0]
	now := m.now()
	quietFrom := a.opened
	if m.lastKey.After(quietFrom) {
		quietFrom = m.lastKey
	}
	wait := quietFrom.Add(graceQuiet).Sub(now)
	if capAt := a.opened.Add(graceMax).Sub(now); capAt < wait {
		wait = capAt
	}
	return max(wait, 0)
}

// answer resolves the front approval and says the answer as one line.
func (m *screen) answer(ans answer) {
	a := m.asks[0]
	m.dropAsk(a)
	word := [...]string{"allowed", "always allowed", "denied", "always denied"}[ans]
	m.commit(direction(m.st, session.Notice{Title: a.tool + " " + word}, m.width)...)
	select {
	case a.reply <- ans.decision():
	default:
	}
}

func (m *screen) status() status {
	s := status{level: m.sess.Level().String(), profile: m.sess.ProfileName(), ctxPercent: m.ctxPercent,
		cost: m.spent + m.turnCost, limit: m.limit, note: m.note, busy: m.busy, quitArmed: !m.quitAt.IsZero() && m.now().Sub(m.quitAt) < quitWindow, quitKey: m.quitKey}
	if m.busy {
		s.elapsed = m.now().Sub(m.turnStart)
	}
	return s
}

// Ask implements permission.Asker for the screen: the request opens the
// pane, and the turn waits for an answer or for its own end.
func (m *screen) ask(ctx context.Context, req permission.Request) (permission.Decision, error) {
	a := &approval{tool: req.Tool, title: req.Title, args: prettyArgs(req), reply: make(chan permission.Decision, 1)}
	if a.title == "" {
		a.title = req.Tool
	}
	if req.SubAgent != "" {
		a.title = req.SubAgent + ": " + a.title // a sub-agent's call, forwarded to its parent's screen
	}
	m.send(askMsg{a: a})
	select {
	case d := <-a.reply:
		return d, nil
	case <-ctx.Done():
		m.send(askGoneMsg{a: a})
		return permission.Deny, nil
	}
}
