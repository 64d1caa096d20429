package repl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/termsafe"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// event turns one session event into live state and commits.
func (m *screen) event(ev agent.Event) tea.Cmd {
	switch ev := ev.(type) {
	case agent.TurnStarted:
		m.turnStarted(ev)
	case agent.TextChunk:
		m.thinkStart = m.thinkStart.Truncate(0)
		m.text(ev.Text)
	case agent.ThoughtChunk:
		if m.thinkStart.IsZero() {
			m.thinkStart = m.now()
		}
	case agent.UserMessage:
		if ev.Message.Source == session.SourceSteer {
			m.endReply()
			for _, p := range ev.Message.Parts {
				if t, ok := p.(model.Text); ok {
					m.commit(userLines(t.Text, m.width)...)
					m.delivered(t.Text)
				}
			}
		}
	case agent.ToolCallStarted:
		m.endReply()
		title := ev.Title
		if title == "" {
			title = ev.Name
		}
		m.calls = append(m.calls, &liveCall{id: ev.CallID, card: card{name: ev.Name, title: title}, started: m.now()})
	case agent.ToolCallOutput:
		if c := m.call(ev.CallID); c != nil {
			c.output = tailString(c.output+ev.Chunk, outputWindow)
		}
	case agent.ToolCallProgress:
		// A running sub-agent's most recent calls, shown in its call's
		// block in place of what was there.
		if c := m.call(ev.CallID); c != nil {
			c.output = strings.Join(ev.Lines, "\n")
		}
	case agent.ToolCallFinished:
		m.endReply()
		c := m.call(ev.CallID)
		r := ev.Result
		fin := card{name: r.Name, title: r.Name, status: r.Status, output: resultText(r), change: r.Change}
		m.lastOutput = strings.TrimRight(fin.output+"\n"+fin.change, "\n")
		if c != nil {
			fin.title = c.title
			fin.took = m.now().Sub(c.started)
			m.removeCall(ev.CallID)
		}
		m.commit(fin.finished(m.st, m.width)...)
	case agent.Notice:
		m.endReply()
		m.snapshotPlan()
		m.commit(direction(m.st, ev.Notice, m.width)...)
	case agent.HookFinished:
		m.endReply()
		m.commit(direction(m.st, ev.Run.Notice(), m.width)...)
	case agent.Usage:
		m.turnCost = ev.Turn.Cost
		if ev.Window > 0 {
			m.ctxPercent = ev.ContextTokens * 100 / ev.Window
		}
		m.snapshotPlan()
	case agent.RateLimit:
		m.limit = ""
		if share, what, _ := ev.Limit.Lowest(); share < lowLimit {
			m.limit = fmt.Sprintf("%s %d%% left", what, int(share*100))
		}
	case agent.CompactionStarted:
		m.compacting = m.now()
	case agent.Compacted:
		m.compacting = m.compacting.Truncate(0)
		m.commit(direction(m.st, session.Notice{Title: fmt.Sprintf("Compacted: the turns before turn %d are summarized for the model; the log keeps them", ev.KeptFrom)}, m.width)...)
	case agent.CompactionFailed:
		m.compacting = m.compacting.Truncate(0)
		if ev.Canceled {
			m.commit(direction(m.st, session.Notice{Title: "Compaction interrupted"}, m.width)...)
		} else {
			m.commit(direction(m.st, session.Notice{Severity: session.SeverityWarning, Title: "Compaction failed: " + fmt.Sprint(ev.Err)}, m.width)...)
		}
	case plan.Changed:
		m.plan = ev
		m.planDirty = true
	case agent.TurnEnded:
		return m.turnEnded(ev.Result)
	}
	return nil
}

func (m *screen) turnStarted(ev agent.TurnStarted) {
	m.busy, m.interrupt, m.turnStart, m.note = true, false, m.now(), ""
	m.block, m.partial, m.inFence = nil, "", false
	in := ev.Input
	if in.Source == session.SourceUser && m.submitting != "" {
		m.ours, m.submitting = true, ""
		text := messageText(in.Parts)
		if m.shown != "" {
			text, m.shown = m.shown, ""
		}
		m.commit(userLines(text, m.width)...)
		return
	}
	// A turn the screen did not start (a job, a task report) takes the
	// prompt: the draft is kept and handed back when it ends.
	m.ours = false
	if v := m.comp.value(); v != "" && m.stash == nil {
		d := m.comp.snapshot()
		m.stash = &d
		m.comp.clear()
	}
	if m.stash != nil {
		m.note = "draft saved — returns after this turn"
	}
	switch in.Source {
	case session.SourceSchedule:
		prompt, header := scheduledParts(in.Parts)
		if header != "" {
			m.commit(direction(m.st, session.Notice{Title: header}, m.width)...)
		}
		m.commit(userLines(prompt, m.width)...)
	case session.SourceTask:
		// The host said which tasks finished as stage directions; the
		// report itself is the model's to read, never shown.
	default:
		m.commit(userLines(messageText(in.Parts), m.width)...)
	}
}

func (m *screen) turnEnded(res agent.Result) tea.Cmd {
	m.endReply()
	m.spent, m.turnCost = spent(m.sess.Rows()), 0
	for _, c := range m.calls {
		c.status = session.StatusCanceled
		c.took = m.now().Sub(c.started)
		m.commit(c.finished(m.st, m.width)...)
	}
	m.calls = nil
	m.snapshotPlan()
	switch res.Stop {
	case agent.StopCanceled:
		m.commit(direction(m.st, session.Notice{Title: "interrupted"}, m.width)...)
	case agent.StopFailed:
		if res.Err != nil && m.ours {
			m.commit(direction(m.st, session.Notice{Severity: session.SeverityError, Title: "turn failed: " + oneLine(res.Err.Error())}, m.width)...)
		}
	case agent.StopMaxTokens:
		m.commit(direction(m.st, session.Notice{Title: "stopped at the output token limit"}, m.width)...)
	}
	interrupted := m.interrupt || res.Stop == agent.StopCanceled
	m.busy, m.ours, m.interrupt, m.note = false, false, false, ""
	m.thinkStart, m.compacting = m.thinkStart.Truncate(0), m.compacting.Truncate(0)

	// Nothing typed is lost: the stashed draft comes back first, then what
	// was typed meanwhile, then steers the turn never took; after an
	// interrupt, the queue too.
	back := m.steers
	m.steers = nil
	if interrupted {
		back = append(back, m.queued...)
		m.queued = nil
	}
	if m.stash != nil {
		typed := m.comp.value()
		m.comp.restore(*m.stash)
		m.stash = nil
		m.giveBack(typed)
	}
	m.giveBack(back...)
	if len(m.queued) > 0 {
		next := m.queued[0]
		m.queued = m.queued[1:]
		return m.submitQueued(next)
	}
	return nil
}

// submitQueued sends what waited for the turn, as if typed now.
func (m *screen) submitQueued(text string) tea.Cmd {
	if name, args, ok := parseCommand(text); ok {
		return m.command(name, args, text)
	}
	return m.start(text)
}

// delivered drops a steer the turn took from the pending list.
func (m *screen) delivered(text string) {
	for i, s := range m.steers {
		if s == text {
			m.steers = append(m.steers[:i], m.steers[i+1:]...)
			return
		}
	}
}

// text adds reply text: each block completed by a blank line outside a
// code fence is committed; the unfinished one stays live.
func (m *screen) text(chunk string) {
	m.partial += chunk
	for {
		i := strings.IndexByte(m.partial, '\n')
		if i < 0 {
			return
		}
		// A reply may not drive the terminal: control sequences are
		// dropped from each line before it is printed, colour kept.
		line := termsafe.String(m.partial[:i], m.st.color)
		m.partial = m.partial[i+1:]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			m.inFence = !m.inFence
		}
		if strings.TrimSpace(line) == "" && !m.inFence {
			m.commitBlock(true)
			continue
		}
		m.block = append(m.block, line)
	}
}

// commitBlock prints the completed block, followed by a blank line when
// the reply continues.
func (m *screen) commitBlock(blank bool) {
	if len(m.block) == 0 {
		return
	}
	for _, l := range m.block {
		m.commit(wrap(l, m.width, "")...)
	}
	if blank {
		m.commit("")
	}
	m.block = m.block[:0]
}

// endReply commits what the reply said so far: a tool call, a notice or
// the turn's end closes its text.
func (m *screen) endReply() {
	if m.partial != "" {
		m.block = append(m.block, termsafe.String(m.partial, m.st.color))
		m.partial = ""
	}
	m.commitBlock(false)
	m.inFence = false
}

// snapshotPlan commits the list once per round when it changed, so that
// scrollback keeps its history; the pinned block shows the current one.
func (m *screen) snapshotPlan() {
	if !m.planDirty {
		return
	}
	m.planDirty = false
	m.commit(planBlock(m.st, m.plan, m.width, false)...)
}

func (m *screen) call(id string) *liveCall {
	for _, c := range m.calls {
		if c.id == id {
			return c
		}
	}
	return nil
}

func (m *screen) removeCall(id string) {
	for i, c := range m.calls {
		if c.id == id {
			m.calls = append(m.calls[:i], m.calls[i+1:]...)
			return
		}
	}
}

// messageText is a message's text, resources named "@name".
func messageText(parts model.Parts) string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			out = append(out, p.Text)
		case model.Resource:
			out = append(out, "@"+p.Name)
		case model.Image:
			out = append(out, "[image]")
		}
	}
	return strings.Join(out, "\n")
}

// scheduledParts splits a scheduled job's message into the prompt as
// written and the scheduler's header line, without its brackets.
func scheduledParts(parts model.Parts) (prompt, header string) {
	var texts []string
	for _, p := range parts {
		if t, ok := p.(model.Text); ok {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) == 0 {
		return "", ""
	}
	prompt = texts[0]
	if len(texts) > 1 {
		first, _, _ := strings.Cut(texts[1], "\n")
		header = strings.TrimSuffix(strings.TrimPrefix(first, "["), "]")
		header = strings.TrimSuffix(header, ".")
	}
	return prompt, header
}

func resultText(r session.ToolResult) string {
	return model.Message{Parts: r.Content}.Text()
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// prettyArgs shows a request's arguments: a command alone for a shell
// call, indented JSON otherwise.
func prettyArgs(req permission.Request) string {
	var v map[string]any
	if json.Unmarshal(req.Arguments, &v) == nil {
		if c, ok := v["command"].(string); ok && len(v) <= 3 {
			return c
		}
	}
	b, err := json.MarshalIndent(json.RawMessage(req.Arguments), "", "  ")
	if err != nil {
		return string(req.Arguments)
	}
	return string(b)
}

func isBusy(err error) bool { return errors.Is(err, agent.ErrBusy) }

// lowLimit is the share of a rate limit left below which the status line
// shows it.
const lowLimit = 0.25

// spent adds up what the log says the session cost: its model calls and
// its sub-agents'.
func spent(rows []session.Row) float64 { return session.Spent(rows).Cost }
