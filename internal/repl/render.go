package repl

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// This file holds the pure renderers: each takes what it shows and a
// width and returns finished lines, pre-wrapped so that the terminal never
// wraps a line the inline renderer counted as one.

// Bounds of what the screen shows of a tool's output.
const (
	liveToolLines = 5 // trailing lines of a running tool's output
	cardHead      = 4 // first lines of a finished tool's output
	cardTail      = 4 // and its last lines
	tailLines     = 6 // lines of the reply's unfinished block in the live region
)

// styles applies colour, or nothing under NO_COLOR. State is never said by
// colour alone: every styled line also has its glyph or word.
type styles struct{ color bool }

func (s styles) sgr(code, text string) string {
	if !s.color || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[m"
}

func (s styles) dim(t string) string  { return s.sgr("2", t) }
func (s styles) warn(t string) string { return s.sgr("33", t) }
func (s styles) bad(t string) string  { return s.sgr("31", t) }
func (s styles) good(t string) string { return s.sgr("32", t) }
func (s styles) bold(t string) string { return s.sgr("1", t) }

// wrap breaks text to width columns: words where it can, hard breaks
// where a word is longer than the line. Every line after the first starts
// with indent.
func wrap(text string, width int, indent string) []string {
	w := max(width-ansi.StringWidth(indent), 1)
	var out []string
	for _, para := range strings.Split(text, "\n") {
		for _, l := range strings.Split(ansi.Wrap(para, w, ""), "\n") {
			l = strings.TrimRight(l, " ")
			if len(out) > 0 {
				l = indent + l
			}
			out = append(out, l)
		}
	}
	return out
}

// fit cuts a line to width columns, marking a cut with "…".
func fit(line string, width int) string {
	if width < 1 {
		return ""
	}
	if ansi.StringWidth(line) <= width {
		return line
	}
	return ansi.Truncate(line, width, "…")
}

// oneLine joins text's lines and collapses its spaces.
func oneLine(text string) string { return strings.Join(strings.Fields(text), " ") }

// userLines renders what the user (or a job) said: "> " then the text, as
// typed. The checklist owns "›", so a user line never uses it.
func userLines(text string, width int) []string {
	var out []string
	for i, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		prefix := "  "
		if i == 0 {
			prefix = "> "
		}
		for j, w := range wrap(l, max(width-2, 1), "") {
			if j > 0 {
				prefix = "  "
			}
			out = append(out, prefix+w)
		}
	}
	return out
}

// direction renders a stage direction: "(title)", a warning "(! title)";
// a description, such as a background task's label, follows on its own
// indented lines.
func direction(st styles, n session.Notice, width int) []string {
	title := oneLine(n.Title)
	var lines []string
	switch n.Severity {
	case session.SeverityWarning, session.SeverityError:
		for _, l := range wrap("(! "+title+")", width, "   ") {
			if n.Severity == session.SeverityError {
				lines = append(lines, st.bad(l))
			} else {
				lines = append(lines, st.warn(l))
			}
		}
	default:
		for _, l := range wrap("("+title+")", width, " ") {
			lines = append(lines, st.dim(l))
		}
	}
	if d := strings.TrimSpace(n.Description); d != "" {
		for _, dl := range strings.Split(d, "\n") {
			for _, l := range wrap(dl, max(width-2, 1), "") {
				lines = append(lines, "  "+st.dim(l))
			}
		}
	}
	return lines
}

// card is a tool call as the screen shows it.
type card struct {
	name, title string
	status      string // session.Status*; "" while running
	took        time.Duration
	output      string // live output so far, or the result's text
	change      string // a unified diff a file tool recorded
}

// toolMark is the glyph and word of a tool call's state.
func toolMark(st styles, status string) string {
	switch status {
	case "":
		return "◐"
	case session.StatusOK:
		return st.good("✓")
	case session.StatusRefused:
		return st.warn("⊘")
	case session.StatusCanceled:
		return st.warn("✗")
	}
	return st.bad("✗")
}

// head is a card's first line: mark, title, and how long it took or has
// been running.
func (c card) head(st styles, width int) string {
	title := oneLine(c.title)
	if title == "" {
		title = c.name
	}
	suffix := ""
	if c.took > 0 || c.status == "" {
		suffix = "  " + elapsed(c.took)
	}
	if c.status == session.StatusRefused {
		suffix = "  refused"
	} else if c.status == session.StatusCanceled {
		suffix = "  interrupted"
	}
	return toolMark(st, c.status) + " " + fit(title, max(width-2-ansi.StringWidth(suffix), 1)) + st.dim(suffix)
}

// finished renders a finished call for scrollback: its head, then the
// diff it recorded or its output, bounded at both ends.
func (c card) finished(st styles, width int) []string {
	lines := []string{c.head(st, width)}
	body := strings.TrimRight(c.output, "\n")
	if c.change != "" {
		body = strings.TrimRight(c.change, "\n")
	}
	if body == "" {
		return lines
	}
	rows := strings.Split(body, "\n")
	if len(rows) > cardHead+cardTail+1 {
		cut := len(rows) - cardHead - cardTail
		rows = append(append(rows[:cardHead:cardHead], fmt.Sprintf("… +%d lines", cut)), rows[len(rows)-cardTail:]...)
	}
	for _, r := range rows {
		r = fit(ansi.Strip(r), max(width-2, 1))
		switch {
		case c.change != "" && strings.HasPrefix(r, "+") && !strings.HasPrefix(r, "+++"):
			r = st.good(r)
		case c.change != "" && strings.HasPrefix(r, "-") && !strings.HasPrefix(r, "---"):
			r = st.bad(r)
		default:
			r = st.dim(r)
		}
		lines = append(lines, "  "+r)
	}
	return lines
}

// running renders a call in the live region: its head and the last lines
// of its live output.
func (c card) running(st styles, width int) []string {
	lines := []string{c.head(st, width)}
	out := strings.TrimRight(c.output, "\n")
	if out == "" {
		return lines
	}
	rows := strings.Split(out, "\n")
	if len(rows) > liveToolLines {
		rows = rows[len(rows)-liveToolLines:]
	}
	for _, r := range rows {
		lines = append(lines, "  "+st.dim(fit(ansi.Strip(r), max(width-2, 1))))
	}
	return lines
}

// elapsed says a duration the way the status line does: 850ms, 2.1s, 12s,
// 3m 4s, 1h 2m.
func elapsed(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
}

// planBlock renders the pinned plan: one row per open item (› in
// progress, □ pending, » deferred with its reason), the active step in
// its activeForm, and a count of the done ones. all shows every item.
func planBlock(st styles, c plan.Changed, width int, all bool) []string {
	label := "Checklist"
	if c.Dialect != "" && c.Dialect != "checklist" {
		label = "Plan"
	}
	if c.Stale && len(c.Items) > 0 {
		// A list from before the person's last message is not what the
		// agent works on now: one line says so until the agent updates it,
		// and /plan shows it whole, marked.
		note := st.dim(fit(staleNote, width))
		if !all {
			return []string{st.bold(label) + "  " + st.dim(fit("from your earlier request, not updated since; /plan shows it", max(width-len(label)-2, 1)))}
		}
		return append([]string{note}, planRows(st, c, width, all, label)...)
	}
	return planRows(st, c, width, all, label)
}

// staleNote marks a stale list on /plan.
const staleNote = "(From your earlier request: the agent has not updated this list since your last message.)"

// planRows renders a plan's rows under label.
func planRows(st styles, c plan.Changed, width int, all bool, label string) []string {
	var rows []string
	for _, it := range c.Items {
		show := all || it.Status.Open() || it.Status == plan.Deferred || it.Status == plan.Blocked
		if !show {
			continue
		}
		text := it.Text
		if it.Status == plan.InProgress && it.ActiveForm != "" {
			text = it.ActiveForm
		}
		if it.Status == plan.Deferred && it.Reason != "" {
			text += " — " + it.Reason
		}
		rows = append(rows, plan.Glyph(it.Status)+" "+oneLine(text))
	}
	if len(rows) == 0 {
		return nil
	}
	done := c.Completed
	pad := strings.Repeat(" ", len(label)+2)
	var out []string
	for i, r := range rows {
		lead := pad
		if i == 0 {
			lead = st.bold(label) + "  "
		}
		if width < 40 {
			lead = ""
			if i == 0 {
				out = append(out, st.bold(label))
			}
		}
		avail := max(width-ansi.StringWidth(lead), 1)
		out = append(out, lead+fit(r, avail))
	}
	if done > 0 && !all {
		if width < 40 {
			pad = ""
		}
		out = append(out, st.dim(fit(fmt.Sprintf("%s(%d done)", pad, done), width)))
	}
	return out
}

// planFull renders /plan: every item of the plan the log adds up to.
func planFull(st styles, c plan.Changed, width int) []string {
	if len(c.Items) == 0 {
		return []string{"(No plan: the agent has not made a list in this session.)"}
	}
	out := planBlock(st, c, width, true)
	out = append(out, st.dim(fmt.Sprintf("%d of %d done", c.Completed, c.Total)))
	return out
}

// approvalPane renders the bottom pane an approval request opens: what
// asks, every argument, the four answers, and whether keys are armed yet.
func approvalPane(st styles, a *approval, width int, armedIn time.Duration) []string {
	rule := st.dim(strings.Repeat("─", max(width, 1)))
	out := []string{rule, st.bold(fit("Allow "+oneLine(a.title)+"?", width))}
	if a.agent != "" {
		out = append(out, st.dim(fit("asked by "+a.agent, width)))
	}
	args := a.args
	rows := strings.Split(args, "\n")
	if len(rows) > approvalArgLines {
		rows = append(rows[:approvalArgLines:approvalArgLines], fmt.Sprintf("… +%d lines", len(rows)-approvalArgLines))
	}
	for _, r := range rows {
		out = append(out, "  "+fit(r, max(width-2, 1)))
	}
	for i, o := range approvalOptions(a.tool) {
		mark := "  "
		if i == a.choice {
			mark = "› "
		}
		out = append(out, fit(mark+o.label+"  ("+o.key+")", width))
	}
	if armedIn > 0 {
		out = append(out, st.dim(fit(fmt.Sprintf("keys armed in %.1fs", armedIn.Seconds()), width)))
	}
	return out
}

// approvalArgLines bounds the arguments the pane shows.
const approvalArgLines = 12

type option struct {
	label, key string
	answer     answer
}

func approvalOptions(tool string) []option {
	return []option{
		{"Allow", "a", answerAllow},
		{"Always allow any " + tool, "A", answerAlwaysAllow},
		{"Deny", "d, esc", answerDeny},
		{"Always deny any " + tool, "D", answerAlwaysDeny},
	}
}

// statusLine is the bottom line: level, profile, context gauge, cost, what is
// running, and the keys that matter now. Below 40 columns only its left
// half is kept.
func statusLine(st styles, s status, width int) string {
	left := []string{s.level, s.profile}
	if s.ctxPercent >= 0 {
		left = append(left, fmt.Sprintf("%d%% ctx", s.ctxPercent))
	}
	if s.cost > 0 {
		left = append(left, host.FormatCost(s.cost))
	}
	if s.limit != "" {
		left = append(left, s.limit)
	}
	if s.note != "" {
		left = append(left, s.note)
	}
	l := strings.Join(left, " · ")
	if width < 40 {
		return st.dim(fit(l, width))
	}
	var right string
	switch {
	case s.quitArmed:
		right = s.quitKey + " again to quit"
	case s.busy:
		right = "working " + elapsed(s.elapsed) + " · esc interrupts"
	default:
		right = "shift+tab level · /help"
	}
	line := l + " · " + right
	return st.dim(fit(line, width))
}

// status is what the status line shows.
type status struct {
	level, profile string
	ctxPercent     int     // -1 when unknown
	cost           float64 // the session's spend in US dollars, 0 when unknown
	limit          string  // the provider's rate limit when it runs low: "tokens 8% left"
	note           string
	busy           bool
	elapsed        time.Duration
	quitArmed      bool
	quitKey        string // the key that armed quitting: ctrl+c or ctrl+d
}
