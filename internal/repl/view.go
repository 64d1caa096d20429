package repl

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// View draws the live region: the reply's unfinished block, thinking,
// compaction, running tools, the plan, pending steers and queued input,
// then the approval pane or the composer, then the status line. It is
// bounded by the window, so the terminal never scrolls a frame.
func (m *screen) View() tea.View {
	if m.quitting {
		// The last frame is cleared: scrollback keeps what was committed.
		return tea.NewView("")
	}
	lines, row, col := m.frame()
	v := tea.NewView(strings.Join(lines, "\n"))
	v.ReportFocus = true // an approval rings when the terminal is not looked at
	if row >= 0 {
		v.Cursor = tea.NewCursor(col, row)
	}
	return v
}

// frame returns the live region's lines and the cursor's place in them
// (row -1: no cursor).
func (m *screen) frame() (lines []string, row, col int) {
	w := m.width
	var top []string
	if n := len(m.block); n > 0 || m.partial != "" {
		var tail []string
		from := max(n-tailLines, 0)
		for _, l := range m.block[from:] {
			tail = append(tail, wrap(l, w, "")...)
		}
		if m.partial != "" {
			tail = append(tail, wrap(m.partial, w, "")...)
		}
		if len(tail) > tailLines {
			tail = tail[len(tail)-tailLines:]
		}
		top = append(top, tail...)
	}
	now := m.now()
	if !m.thinkStart.IsZero() && m.partial == "" && len(m.block) == 0 {
		top = append(top, m.st.dim(fit("thinking… "+elapsed(now.Sub(m.thinkStart)), w)))
	}
	if !m.compacting.IsZero() {
		top = append(top, m.st.dim(fit("Compacting the conversation… "+elapsed(now.Sub(m.compacting)), w)))
	}
	for _, c := range m.calls {
		cc := c.card
		cc.took = now.Sub(c.started)
		top = append(top, cc.running(m.st, w)...)
	}
	top = append(top, planBlock(m.st, m.plan, w, false)...)
	for _, s := range m.steers {
		top = append(top, m.st.dim(fit("steer (goes with the next tool results): "+oneLine(s), w)))
	}
	for _, q := range m.queued {
		top = append(top, m.st.dim(fit("queued (runs after this turn): "+oneLine(q), w)))
	}

	var bottom []string
	row = -1
	if len(m.asks) > 0 {
		bottom = approvalPane(m.st, m.asks[0], w, m.armedIn())
		if n := len(m.asks) - 1; n > 0 {
			bottom = append(bottom, m.st.dim(fit(fmt.Sprintf("%d more waiting", n), w)))
		}
	} else {
		prompt := "> "
		if m.busy {
			prompt = "» "
		}
		comp, r, c := m.comp.render(w, prompt)
		if len(comp) > maxComposerLines {
			// Keep the cursor's line in view.
			from := min(max(r-maxComposerLines+1, 0), len(comp)-maxComposerLines)
			comp = comp[from : from+maxComposerLines]
			r -= from
		}
		row, col = len(bottom)+r, c
		bottom = append(bottom, comp...)
	}
	bottom = append(bottom, statusLine(m.st, m.status(), w))

	// Never taller than the window less one line: the top goes first.
	room := max(m.height-1-len(bottom), 0)
	if len(top) > room {
		top = top[len(top)-room:]
	}
	if len(bottom) > m.height-1 {
		cut := len(bottom) - (m.height - 1)
		bottom = bottom[cut:]
		row -= cut
	}
	if row >= 0 {
		row += len(top)
	}
	return append(top, bottom...), row, col
}

// maxComposerLines bounds the composer's height.
const maxComposerLines = 8
