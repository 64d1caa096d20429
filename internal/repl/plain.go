package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// plainWidth is the width line mode wraps stage directions and lists to.
const plainWidth = 100

// runPlain is line mode: each input line is a prompt, events print as
// plain lines, with no cursor addressing and no colour. Every turn is
// printed, also those the session runs on its own (a job, a task report);
// lines read while a turn runs wait for it, in order, and none is
// dropped. At the end of input the queue is run out and Run returns.
func runPlain(ctx context.Context, s Session, opts Options) (Session, error) {
	pr := &plainPrinter{w: opts.Out, idle: make(chan struct{}, 1)}
	unsub := func() {}
	asking := &plainAsk{}
	lines := make(chan string)
	// The questions read the reader's channel itself; the loop's copy
	// becomes nil at the end of input.
	input := lines
	attach := func(s Session) {
		unsub = s.Subscribe(pr.event)
		s.SetAsker(permission.AskerFunc(func(ctx context.Context, req permission.Request) (permission.Decision, error) {
			if !opts.Ask {
				// Nobody can answer a prompt here: a call above the level
				// is denied and said so.
				pr.line(fmt.Sprintf("(%s denied: approvals need a terminal; raise the level with /permission)", req.Tool))
				return permission.Deny, nil
			}
			return asking.ask(ctx, pr, input, req)
		}))
		// Not at a terminal nobody answers an MCP server's request for
		// input: the session declines it with a notice.
		if e, ok := s.(elicitor); ok && opts.Ask {
			e.SetElicitor(host.ElicitorFunc(func(ctx context.Context, el host.Elicitation) (host.ElicitResult, error) {
				return asking.elicit(ctx, pr, input, el)
			}))
		}
	}
	attach(s)
	defer func() {
		unsub()
		s.SetAsker(nil)
		if e, ok := s.(elicitor); ok {
			e.SetElicitor(nil)
		}
	}()
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = 16 << 20
	}

	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(opts.In)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = ErrLineTooLong
		}
		readErr <- err
		close(lines)
	}()

	var queue []string
	if p := strings.TrimSpace(opts.FirstPrompt); p != "" {
		queue = append(queue, p)
	}
	eof := false
	for {
		// Run out what is queued; a turn the session runs on its own holds
		// the next line until it ends.
		for len(queue) > 0 && ctx.Err() == nil {
			text := queue[0]
			if word, ok := unknownCommand(text, knownCommands(s, opts.MCP)); ok {
				queue = queue[1:]
				pr.line("(! " + unknownText(word, knownCommands(s, opts.MCP)) + ")")
				continue
			}
			if name, args, ok := parseCommand(text); ok {
				queue = queue[1:]
				if name == "quit" || name == "exit" {
					return s, nil
				}
				pr.lines(plainCommand(ctx, s, opts, name, args))
				continue
			}
			if _, ok := s.(*unopened); ok {
				n, err := create(ctx, s)
				if err != nil {
					pr.line("(! not sent: " + err.Error() + ")")
					queue = queue[1:]
					continue
				}
				s = n
				attach(s)
			}
			_, err := runTurn(ctx, s, text, pr)
			if isBusy(err) {
				break
			}
			queue = queue[1:]
		}
		if ctx.Err() != nil {
			return s, nil
		}
		if eof && len(queue) == 0 {
			return s, <-readErr
		}
		select {
		case <-ctx.Done():
			return s, nil
		case l, ok := <-lines:
			if !ok {
				eof, lines = true, nil
				continue
			}
			if asking.answer(l) {
				continue // the answer to an approval a job's turn asked
			}
			if strings.TrimSpace(l) != "" {
				// Leading space kept: " /word" is text for the model.
				queue = append(queue, strings.TrimRight(l, " \t\r"))
			}
		case <-pr.idle:
		}
	}
}

// runTurn runs one typed turn; input read meanwhile waits in the reader.
func runTurn(ctx context.Context, s Session, text string, pr *plainPrinter) (agent.Result, error) {
	res, err := s.Run(ctx, session.UserMessage{Parts: model.Parts{model.Text{Text: text}}})
	if err != nil && !isBusy(err) && res.Stop == "" {
		pr.line("(! not sent: " + err.Error() + ")")
	}
	return res, err
}

// plainCommand answers the read-only commands in line mode.
func plainCommand(ctx context.Context, s Session, opts Options, name, args string) []string {
	switch name {
	case "status":
		return statusBlock(s)
	case "hooks":
		return strings.Split(hooksReport(s), "\n")
	case "schedule":
		return scheduleText(ctx, opts.Schedules, s, args, opts.Now(), plainWidth)
	case "permission":
		if args == "" {
			return []string{"Permission: " + s.Level().String()}
		}
		l, err := permission.ParseLevel(args)
		if err == nil {
			err = s.SetLevel(ctx, l)
		}
		if err != nil {
			return []string{"(! permission unchanged: " + err.Error() + ")"}
		}
		return []string{"(permission: " + l.String() + ")"}
	}
	return []string{fmt.Sprintf("(/%s needs the screen; line mode answers /status, /permission and /schedule)", name)}
}

// plainPrinter prints a session's events as lines.
type plainPrinter struct {
	mu      sync.Mutex // guards the fields below and writes to w
	w       io.Writer
	midLine bool
	idle    chan struct{}
}

func (p *plainPrinter) line(s string) { p.lines([]string{s}) }

func (p *plainPrinter) lines(ls []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.breakLine()
	for _, l := range ls {
		fmt.Fprintln(p.w, l)
	}
}

func (p *plainPrinter) breakLine() {
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}

func (p *plainPrinter) event(ev agent.Event) {
	st := styles{}
	var out []string
	switch ev := ev.(type) {
	case agent.TurnStarted:
		in := ev.Input
		switch in.Source {
		case session.SourceSchedule:
			prompt, header := scheduledParts(in.Parts)
			out = append(out, "("+header+")")
			out = append(out, userLines(prompt, plainWidth)...)
		case session.SourceTask:
		default:
			out = append(out, userLines(messageText(in.Parts), plainWidth)...)
		}
	case agent.TextChunk:
		p.mu.Lock()
		io.WriteString(p.w, ev.Text)
		if ev.Text != "" {
			p.midLine = !strings.HasSuffix(ev.Text, "\n")
		}
		p.mu.Unlock()
		return
	case agent.UserMessage:
		if ev.Message.Source == session.SourceSteer {
			out = userLines(messageText(ev.Message.Parts), plainWidth)
		}
	case agent.ToolCallStarted:
		title := ev.Title
		if title == "" {
			title = ev.Name
		}
		out = []string{"◐ " + oneLine(title)}
	case agent.ToolCallFinished:
		r := ev.Result
		c := card{name: r.Name, title: r.Name, status: r.Status, output: resultText(r), change: r.Change}
		out = c.finished(st, plainWidth)
	case agent.Notice:
		out = direction(st, ev.Notice, plainWidth)
	case agent.HookFinished:
		out = direction(st, ev.Run.Notice(), plainWidth)
	case agent.Compacted:
		out = []string{fmt.Sprintf("(Compacted: the turns before turn %d are summarized for the model)", ev.KeptFrom)}
	case agent.CompactionFailed:
		if ev.Canceled {
			out = []string{"(Compaction interrupted)"}
		} else {
			out = []string{fmt.Sprintf("(! Compaction failed: %v)", ev.Err)}
		}
	case plan.Changed:
		out = planBlock(st, ev, plainWidth, false)
	case agent.TurnEnded:
		switch ev.Result.Stop {
		case agent.StopCanceled:
			out = []string{"(interrupted)"}
		case agent.StopMaxTokens:
			out = []string{"(stopped at the output token limit)"}
		}
		p.lines(out)
		p.mu.Lock()
		p.breakLine()
		p.mu.Unlock()
		select {
		case p.idle <- struct{}{}:
		default:
		}
		return
	}
	if len(out) > 0 {
		p.lines(out)
	}
}

// plainAsk puts approvals and MCP elicitations to a person at a terminal
// in line mode: each question is a line, the next line read its answer.
type plainAsk struct {
	mu sync.Mutex // guards pending and keep
	// pending takes the lines the loop reads while a question is open;
	// nil when none is. keep holds it open after a line, for the several
	// questions of an elicitation.
	pending chan string
	keep    bool
	one     sync.Mutex // one exchange at a time
}

// open opens the channel the loop's lines go to while questions are
// asked; close closes it.
func (p *plainAsk) open(keep bool) chan string {
	ch := make(chan string, 16)
	p.mu.Lock()
	p.pending, p.keep = ch, keep
	p.mu.Unlock()
	return ch
}

func (p *plainAsk) close() {
	p.mu.Lock()
	p.pending = nil
	p.mu.Unlock()
}

// next prints a question and waits for its answer: from the reader
// directly while a typed turn holds the main loop, or through answer when
// the loop read it. ok is false at the end of input or of ctx.
func (p *plainAsk) next(ctx context.Context, pr *plainPrinter, q chan string, lines <-chan string, question string) (string, bool) {
	pr.line(question)
	select {
	case <-ctx.Done():
		return "", false
	case l := <-q:
		return l, true
	case l, ok := <-lines:
		return l, ok
	}
}

// ask puts an approval. No answer, or any but y, a or d, is deny.
func (p *plainAsk) ask(ctx context.Context, pr *plainPrinter, lines <-chan string, req permission.Request) (permission.Decision, error) {
	p.one.Lock()
	defer p.one.Unlock()
	q := p.open(false)
	defer p.close()
	title := req.Title
	if req.SubAgent != "" {
		title = req.SubAgent + ": " + title
	}
	reply, ok := p.next(ctx, pr, q, lines, fmt.Sprintf("Allow %s? [y/N/a/d] (y once, a always, d never)", oneLine(title)))
	if !ok {
		return permission.Deny, nil
	}
	d := map[string]permission.Decision{"y": permission.Allow, "yes": permission.Allow,
		"a": permission.AlwaysAllow, "d": permission.AlwaysDeny}[strings.ToLower(strings.TrimSpace(reply))]
	pr.line("(" + req.Tool + ": " + map[permission.Decision]string{permission.Allow: "allowed once", permission.AlwaysAllow: "always allowed",
		permission.AlwaysDeny: "always denied", permission.Deny: "denied"}[d] + ")")
	return d, nil
}

// answer hands a line to the open question, reporting whether there was
// one to take it.
func (p *plainAsk) answer(l string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		return false
	}
	select {
	case p.pending <- l:
	default:
		return false // answers typed far ahead of the questions
	}
	if !p.keep {
		p.pending = nil
	}
	return true
}
