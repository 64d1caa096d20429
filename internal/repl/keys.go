package repl

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/internal/termsafe"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
)

// key handles one key press. Ctrl+C has one order: an open approval, then
// a running turn, then a draft to clear, then quitting.
func (m *screen) key(k tea.KeyPressMsg) tea.Cmd {
	now := m.now()
	keyName := k.String()
	if keyName != "ctrl+c" && keyName != "ctrl+d" {
		m.quitAt = m.quitAt.Truncate(0)
	}
	if len(m.asks) > 0 {
		return m.approvalKey(keyName, k)
	}
	if len(m.elicits) > 0 && m.elicitKey(keyName) {
		return nil
	}
	if m.confirm != nil {
		m.confirmKey(keyName)
		return nil
	}
	m.lastKey = now
	switch keyName {
	case "ctrl+c":
		switch {
		case m.busy:
			m.interruptTurn()
		case m.comp.value() != "":
			m.comp.remember(m.comp.value())
			m.comp.clear()
		default:
			return m.armQuit(now, keyName)
		}
		return nil
	case "ctrl+d":
		if m.comp.value() == "" && !m.busy {
			return m.armQuit(now, keyName)
		}
		m.comp.deleteForward()
		return nil
	case "esc":
		if m.busy {
			m.interruptTurn()
		}
		return nil
	case "enter":
		text := m.comp.value()
		m.comp.clear()
		return m.submit(text)
	case "shift+enter", "alt+enter", "ctrl+j":
		m.comp.insert("\n")
	case "shift+tab":
		m.cycleLevel()
	case "tab":
		if m.busy {
			if t := m.comp.value(); strings.TrimSpace(t) != "" {
				m.comp.remember(t)
				m.queued = append(m.queued, t)
				m.comp.clear()
			}
			return nil
		}
		m.complete()
	case "backspace":
		m.comp.backspace()
	case "delete":
		m.comp.deleteForward()
	case "left", "ctrl+b":
		m.comp.left()
	case "right", "ctrl+f":
		m.comp.right()
	case "home", "ctrl+a":
		m.comp.home()
	case "end", "ctrl+e":
		m.comp.end()
	case "up", "ctrl+p":
		m.comp.up()
	case "down", "ctrl+n":
		m.comp.down()
	case "ctrl+u":
		m.comp.killLine()
	case "ctrl+w", "alt+backspace":
		m.comp.killWord()
	case "ctrl+z":
		return tea.Suspend
	case "ctrl+t":
		// The whole list, once, into scrollback.
		m.commit(planFull(m.st, m.plan, m.width)...)
	case "ctrl+l":
		return tea.ClearScreen
	case "ctrl+o":
		return m.pageOutput()
	default:
		if k.Text != "" {
			m.comp.insert(k.Text)
		}
	}
	return nil
}

// armQuit arms quitting, or quits when it was armed within the window.
// Quitting waits for the outbox: everything committed is printed first.
func (m *screen) armQuit(now time.Time, key string) tea.Cmd {
	if !m.quitAt.IsZero() && now.Sub(m.quitAt) < quitWindow {
		m.quitting = true
		return nil
	}
	m.quitAt, m.quitKey = now, key
	return nil
}

// approvalKey answers the open approval. Keys count as typing: until
// they have been quiet for a moment the pane ignores them, so a key meant
// for the prompt never answers it. Ctrl+C interrupts the turn, which
// withdraws the request.
func (m *screen) approvalKey(name string, k tea.KeyPressMsg) tea.Cmd {
	if name == "ctrl+c" {
		m.interruptTurn()
		return nil
	}
	if m.armedIn() > 0 {
		m.lastKey = m.now()
		return nil
	}
	m.lastKey = m.now()
	a := m.asks[0]
	switch name {
	case "a":
		m.answer(answerAllow)
	case "A", "shift+a":
		m.answer(answerAlwaysAllow)
	case "d", "esc":
		m.answer(answerDeny)
	case "D", "shift+d":
		m.answer(answerAlwaysDeny)
	case "up", "shift+tab":
		a.choice = (a.choice + 3) % 4
	case "down", "tab":
		a.choice = (a.choice + 1) % 4
	case "enter":
		m.answer(answer(a.choice))
	}
	return nil
}

// cycleLevel moves to the next enabled permission level at or below the
// ceiling and stores it; a running turn's next tool call sees it. Going
// above the ceiling takes /permission and a confirmation, so Shift+Tab
// never lands on a level nobody asked for.
func (m *screen) cycleLevel() {
	levels := m.cycle()
	if len(levels) == 0 {
		return
	}
	cur := m.sess.Level()
	next := levels[0]
	for i, l := range levels {
		if l == cur {
			next = levels[(i+1)%len(levels)]
			break
		}
	}
	if next == cur {
		m.commit(direction(m.st, session.Notice{Title: "permission: " + cur.String() + " is the only level up to where this session started; /permission LEVEL goes higher"}, m.width)...)
		return
	}
	m.setLevel(next)
}

// cycle is the enabled levels Shift+Tab visits: those at or below the
// ceiling.
func (m *screen) cycle() []permission.Level {
	var out []permission.Level
	for _, l := range m.enabled() {
		if l <= m.ceiling {
			out = append(out, l)
		}
	}
	return out
}

func (m *screen) enabled() []permission.Level {
	if len(m.opts.Levels) == 0 {
		return []permission.Level{permission.None, permission.Read, permission.Workspace, permission.Unrestricted}
	}
	return m.opts.Levels
}

// askLevel is /permission LEVEL: at or below the ceiling it applies; above
// it, it waits for y.
func (m *screen) askLevel(l permission.Level) []string {
	if l <= m.ceiling {
		m.setLevel(l)
		return nil
	}
	m.confirm = &l
	what := "the agent may write outside this directory"
	if l == permission.Unrestricted {
		what = "the agent's commands run unconfined, with your rights everywhere"
	}
	return wrap(fmt.Sprintf("Raise the permission to %s, above the %s this session started at? At %s %s. Press y to confirm, any other key keeps %s.",
		l, m.ceiling, l, what, m.sess.Level()), m.width, "  ")
}

// confirmKey answers askLevel's question.
func (m *screen) confirmKey(name string) {
	l := *m.confirm
	m.confirm = nil
	if name != "y" && name != "Y" && name != "shift+y" {
		m.commit(direction(m.st, session.Notice{Title: "permission unchanged: " + m.sess.Level().String()}, m.width)...)
		return
	}
	m.ceiling = l
	m.setLevel(l)
}

func (m *screen) setLevel(l permission.Level) {
	if err := m.sess.SetLevel(context.WithoutCancel(m.ctx), l); err != nil {
		m.commit(direction(m.st, session.Notice{Severity: session.SeverityWarning, Title: "permission unchanged: " + err.Error()}, m.width)...)
		return
	}
	m.commit(direction(m.st, session.Notice{Title: "permission: " + l.String()}, m.width)...)
}

// complete finishes a slash command's name.
func (m *screen) complete() {
	v := m.comp.value()
	if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " \n") {
		return
	}
	var found []string
	names := m.skillNames()
	for _, p := range m.mcpPrompts() {
		names = append(names, p.Name)
	}
	for _, c := range commands {
		names = append(names, c.name)
	}
	for _, n := range names {
		if strings.HasPrefix("/"+n, v) {
			found = append(found, n)
		}
	}
	if len(found) == 1 {
		m.comp.set("/" + found[0] + " ")
	}
}

// pageOutput shows the last finished tool's whole output in $PAGER
// (less when unset), the screen suspended meanwhile.
func (m *screen) pageOutput() tea.Cmd {
	if m.lastOutput == "" {
		m.commit(m.st.dim("(no tool output yet)"))
		return nil
	}
	f, err := os.CreateTemp("", "meka-output-*.txt")
	if err != nil {
		m.commit(m.st.dim("(cannot page the output: " + err.Error() + ")"))
		return nil
	}
	_, werr := f.WriteString(termsafe.String(m.lastOutput, false) + "\n")
	f.Close()
	if werr != nil {
		os.Remove(f.Name())
		m.commit(m.st.dim("(cannot page the output: " + werr.Error() + ")"))
		return nil
	}
	pager := "less"
	for _, kv := range m.opts.Environ {
		if v, ok := strings.CutPrefix(kv, "PAGER="); ok && strings.TrimSpace(v) != "" {
			pager = v
		}
	}
	fields := strings.Fields(pager)
	cmd := exec.Command(fields[0], append(fields[1:], f.Name())...)
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		os.Remove(f.Name())
		if err != nil {
			return doneMsg{lines: []string{m.st.dim("(the pager failed: " + err.Error() + ")")}}
		}
		return doneMsg{}
	})
}
