package repl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	tea "charm.land/bubbletea/v2"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/schedule"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// The slash commands the screen answers itself, never calling the model.
// After them come skills and MCP prompts (built-ins win); any other /word
// is answered as unknown, never sent, while a path such as /etc/hosts,
// or a line starting with a space, goes to the model as typed.
// hooksReport is /hooks: the host's report, or none for a session that
// runs no hooks (a test's).
func hooksReport(s Session) string {
	if r, ok := s.(interface{ HooksReport() string }); ok {
		return r.HooksReport()
	}
	return "This session runs no hooks."
}

var commands = []struct {
	name, args, help string
	// now: answered at once during a turn; the others wait for its end.
	now bool
}{
	{"help", "", "this list", true},
	{"status", "", "level, profile, model, context, tokens", true},
	{"permission", "[level]", "show or set the permission level", true},
	{"schedule", "[show|cancel ID]", "this session's scheduled jobs", true},
	{"plan", "[pick ID [words]]", "the whole plan; pick reopens a deferred item for the agent", true},
	{"skill", "[NAME [words]]", "run a skill: its instructions, then your words, go to the model", false},
	{"usage", "", "rate-limit windows (subscription backends)", true},
	{"mcp", "", "MCP servers and their status", true},
	{"hooks", "", "the hooks this session runs, and where each comes from", true},
	{"memories", "", "the memories this session sees (its project's, or yours)", true},
	{"reload", "", "read AGENTS.md, skills and the environment again", false},
	{"profile", "[name]", "show or switch the model profile", false},
	{"cd", "DIR", "move the session to another directory", false},
	{"compact", "[focus]", "summarize older turns now, keeping focus in particular", false},
	{"pin", "words", "send words the agent keeps verbatim through every compaction", false},
	{"context", "", "what compactions dropped and what they keep verbatim", true},
	{"rewind", "[force|files]", "take the last turn back, and the files it changed; its prompt returns here (files: what each turn changed)", false},
	{"fork", "", "continue in a copy of this session", false},
	{"clear", "", "start a new session here; this one stays (meka -r ID)", false},
	{"quit", "", "leave meka (also /exit, or Ctrl+C or Ctrl+D twice)", false},
	{"exit", "", "leave meka", false},
}

// parseCommand reports text that is exactly a built-in command: "/name"
// then nothing or words. /etc/hosts, //x and /unknown are not.
func parseCommand(text string) (name, args string, ok bool) {
	t := strings.TrimSpace(text)
	rest, found := strings.CutPrefix(t, "/")
	if !found {
		return "", "", false
	}
	name, args, _ = strings.Cut(rest, " ")
	if strings.ContainsAny(name, "\n\t") {
		name, args, _ = strings.Cut(strings.ReplaceAll(rest, "\n", " "), " ")
	}
	for _, c := range commands {
		if c.name == name {
			return name, strings.TrimSpace(args), true
		}
	}
	return "", "", false
}

// command runs a built-in. During a turn the ones that change the session
// wait for its end.
func (m *screen) command(name, args, typed string) tea.Cmd {
	if m.busy || m.submitting != "" {
		if name == "profile" || name == "cd" {
			// The host's rule, in ACP's words.
			m.commit(m.st.dim("> " + oneLine(typed)))
			m.commit(direction(m.st, session.Notice{Severity: session.SeverityWarning,
				Title: "cannot switch " + map[string]string{"profile": "profile", "cd": "directory"}[name] + " while a turn is in flight; cancel it first"}, m.width)...)
			m.comp.set(typed)
			return nil
		}
		for _, c := range commands {
			if c.name == name && (!c.now || name == "plan" && isPick(args)) {
				m.queued = append(m.queued, typed)
				return nil
			}
		}
	}
	if name == "skill" && args != "" {
		skill, _, _ := strings.Cut(args, " ")
		if slices.Contains(m.skillNames(), skill) {
			// The skill's invocation, as if typed: the host reads the
			// skill's body after the words (seed 002's /skill).
			return m.start("/" + args)
		}
	}
	if name == "pin" && args != "" {
		return m.startMessage(session.UserMessage{Parts: model.Parts{model.Text{Text: args}}, Pinned: true})
	}
	if name == "plan" && isPick(args) {
		msg, err := m.pickUp(args)
		if err != nil {
			m.commit(m.st.dim("> " + oneLine(typed)))
			m.commit(wrap(err.Error(), m.width, "  ")...)
			return nil
		}
		return m.startMessage(msg)
	}
	m.commit(m.st.dim("> " + oneLine(typed)))
	lines, cmd := m.runCommand(name, args)
	m.commit(lines...)
	return cmd
}

// runCommand answers a command with lines for scrollback, or with a Cmd
// whose doneMsg answers later.
func (m *screen) runCommand(name, args string) ([]string, tea.Cmd) {
	s, ctx, w := m.sess, context.WithoutCancel(m.ctx), m.width
	say := func(format string, a ...any) []string { return wrap(fmt.Sprintf(format, a...), w, "  ") }
	switch name {
	case "help":
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, c := range commands {
			fmt.Fprintf(tw, "/%s %s\t%s\n", c.name, c.args, c.help)
		}
		for _, name := range m.skillNames() {
			fmt.Fprintf(tw, "/%s [words]\tskill\n", name)
		}
		for _, p := range m.mcpPrompts() {
			fmt.Fprintf(tw, "/%s %s\tMCP prompt: %s\n", p.Name, p.Hint, oneLine(p.Description))
		}
		tw.Flush()
		b.WriteString("Enter sends (during a turn: steers). Shift+Enter or Alt+Enter: new line. Esc or Ctrl+C interrupts.\nTab during a turn queues the prompt for after it. Shift+Tab cycles the permission levels up to the one the session started at. /quit, or Ctrl+C or Ctrl+D twice, quits.")
		return strings.Split(b.String(), "\n"), nil
	case "status":
		return statusBlock(s), nil
	case "permission":
		if args == "" {
			return say("Permission: %s. Levels: %s. Shift+Tab cycles them.", s.Level(), levelNames(m.opts.Levels)), nil
		}
		l, err := permission.ParseLevel(args)
		if err != nil {
			return say("%v", err), nil
		}
		enabled := false
		for _, e := range m.enabled() {
			enabled = enabled || e == l
		}
		if !enabled {
			return say("%s is not enabled ([permissions] enabled): %s", l, levelNames(m.opts.Levels)), nil
		}
		return m.askLevel(l), nil
	case "plan":
		c := currentPlan(s)
		if len(c.Items) == 0 && c.Total == 0 {
			c = m.plan
		}
		out := planFull(m.st, c, w)
		if ids := deferredIDs(c); len(ids) > 0 {
			out = append(out, say("Deferred: %s. /plan pick ID [words] picks one up: it is open again, and the agent works on it with your words.", strings.Join(ids, ", "))...)
		}
		return out, nil
	case "skill":
		names := m.skillNames()
		if args == "" {
			if len(names) == 0 {
				return say("No skills are installed here."), nil
			}
			return say("Skills: %s. /skill NAME [words] runs one (so does /NAME [words]).", strings.Join(names, ", ")), nil
		}
		skill, _, _ := strings.Cut(args, " ")
		return say("no skill is called %s; /skill lists them", skill), nil
	case "usage":
		return say("Rate-limit windows are reported only for subscription backends; this session's profile (%s) uses an API key, so there are none to show.", s.ProfileName()), nil
	case "mcp":
		if m.opts.MCP == nil {
			return say("No MCP servers are configured."), nil
		}
		return strings.Split(m.opts.MCP.MCPReport(), "\n"), nil
	case "schedule":
		return m.scheduleCommand(ctx, args), nil
	case "hooks":
		return strings.Split(hooksReport(s), "\n"), nil
	case "memories":
		mem, ok := s.(interface {
			Memories(ctx context.Context) (string, error)
		})
		if !ok {
			return say("This session keeps no memories."), nil
		}
		text, err := mem.Memories(ctx)
		if err != nil {
			return say("%v", err), nil
		}
		return strings.Split(strings.TrimRight(text, "\n"), "\n"), nil
	case "reload":
		r, ok := s.(interface {
			Reload(ctx context.Context) (Session, error)
		})
		if !ok {
			return say("This session has no instructions to reload."), nil
		}
		return nil, m.switchSession(r.Reload, "")
	case "profile":
		if args == "" {
			return say("Profile: %s. /profile NAME switches; the old backend's thinking is not replayed.", s.ProfileName()), nil
		}
		return nil, m.switchSession(func(ctx context.Context) (Session, error) {
			if err := s.Update(ctx, func(meta *session.Meta) { meta.Profile = args }); err != nil {
				return nil, err
			}
			return s.Reopen(ctx)
		}, "profile: "+args)
	case "cd":
		if args == "" {
			return say("Directory: %s", s.Meta().Cwd), nil
		}
		dir := args
		if strings.HasPrefix(dir, "~/") {
			if home, err := os.UserHomeDir(); err == nil {
				dir = filepath.Join(home, dir[2:])
			}
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.Meta().Cwd, dir)
		}
		return nil, m.switchSession(func(ctx context.Context) (Session, error) {
			if err := s.Update(ctx, func(meta *session.Meta) { meta.Cwd = dir }); err != nil {
				return nil, err
			}
			return s.Reopen(ctx)
		}, "")
	case "compact":
		return []string{m.st.dim("Compacting the conversation…")}, func() tea.Msg {
			if err := s.CompactFocus(ctx, args); err != nil {
				return doneMsg{lines: direction(m.st, session.Notice{Severity: session.SeverityWarning, Title: "Compaction failed: " + err.Error()}, w)}
			}
			return doneMsg{}
		}
	case "pin":
		return say("/pin takes the words to send: they reach the agent now and stay verbatim through every compaction."), nil
	case "context":
		return contextReport(s.Rows(), w), nil
	case "rewind":
		if args == "files" {
			return nil, func() tea.Msg { return doneMsg{lines: turnFiles(ctx, s, w)} }
		}
		return nil, func() tea.Msg { return rewind(ctx, s, m.st, w, args == "force") }
	case "fork":
		return nil, m.switchSession(func(ctx context.Context) (Session, error) { return s.Fork(ctx) }, "")
	case "quit", "exit":
		m.quitting = true
		return nil, nil
	case "clear":
		return m.clear()
	}
	return nil, nil
}

// clear is /clear: the screen lets the session go and shows a new one,
// created (as at startup) by the first message sent to it.
func (m *screen) clear() ([]string, tea.Cmd) {
	old := m.sess
	if m.opts.NewSession == nil {
		return wrap("This screen cannot start another session; quit and run meka.", m.width, "  "), nil
	}
	next := Unopened(old.ProfileName(), old.Level(), m.opts.NewSession)
	title := "New session: it starts with your next message"
	if old.ID() != "" {
		title += fmt.Sprintf(". The previous one is %s: meka -r %s resumes it", shortID(old.ID()), shortID(old.ID()))
	}
	ctx, st, w := context.WithoutCancel(m.ctx), m.st, m.width
	return nil, func() tea.Msg {
		if c, ok := old.(interface{ Close(context.Context) error }); ok {
			if err := c.Close(ctx); err != nil {
				return doneMsg{lines: direction(st, session.Notice{Severity: session.SeverityWarning, Title: "clear: " + err.Error()}, w)}
			}
		}
		return doneMsg{next: next, lines: direction(st, session.Notice{Title: title}, w)}
	}
}

// unknownCommand reports text that looks like a slash command (/word at
// the very start, word an identifier) but names none of known (built-ins,
// skills, MCP prompts). Paths (/etc/hosts) and text after a space are
// prompts.
func unknownCommand(text string, known []string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", false
	}
	word, _, _ := strings.Cut(strings.ReplaceAll(rest, "\n", " "), " ")
	if word == "" {
		return "", false
	}
	for i, r := range word {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (i == 0 || !(r >= '0' && r <= '9' || r == '-' || r == '_')) {
			return "", false
		}
	}
	if slices.Contains(known, word) {
		return "", false // a skill's or MCP prompt's invocation
	}
	return word, true
}

// unknownText answers an unknown /word: the nearest of known, /help, and
// how to send the text anyway.
func unknownText(word string, known []string) string {
	best, bestDist := "", 3
	for _, n := range known {
		if d := distance(strings.ToLower(word), strings.ToLower(n)); d < bestDist && d <= max(1, len(n)/3) {
			best, bestDist = n, d
		}
	}
	text := "unknown command /" + word
	if best != "" {
		text += " (did you mean /" + best + "?)"
	}
	return text + "; nothing was sent. /help lists the commands; start the line with a space to send it to the model"
}

// knownCommands are the names a slash may start: built-ins, s's skills,
// the MCP servers' prompts.
func knownCommands(s Session, mcp MCP) []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	if sl, ok := s.(skillLister); ok {
		names = append(names, sl.SkillNames()...)
	}
	if mcp != nil {
		for _, p := range mcp.MCPPrompts() {
			names = append(names, p.Name)
		}
	}
	return names
}

// distance counts the edits (insert, delete, substitute, swap adjacent)
// between two short words.
func distance(a, b string) int {
	if len(a) > 64 {
		a = a[:64]
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// switchSession runs open off the screen's goroutine and holds the session
// it returns.
func (m *screen) switchSession(open func(ctx context.Context) (Session, error), said string) tea.Cmd {
	ctx, st, w := context.WithoutCancel(m.ctx), m.st, m.width
	return func() tea.Msg {
		n, err := open(ctx)
		if err != nil {
			return doneMsg{lines: direction(st, session.Notice{Severity: session.SeverityWarning, Title: err.Error()}, w)}
		}
		title := fmt.Sprintf("session %s in %s, profile %s", shortID(n.ID()), n.Meta().Cwd, n.ProfileName())
		if said != "" {
			title = said + "; " + title
		}
		return doneMsg{next: n, lines: direction(st, session.Notice{Title: title}, w)}
	}
}

func (m *screen) commandDone(msg doneMsg) tea.Cmd {
	if msg.next != nil && msg.next != m.sess {
		m.hold(msg.next)
	} else if !m.busy {
		m.plan = currentPlan(m.sess) // a rewind drops what its turn added
	}
	m.commit(msg.lines...)
	if msg.compose != "" {
		m.giveBack(msg.compose)
	}
	return nil
}

// rewind takes the last turn back and returns its prompt to the composer.
func rewind(ctx context.Context, s Session, st styles, w int, force bool) tea.Msg {
	rows := s.Rows()
	last := session.LastTurn(rows)
	if last == 0 {
		return doneMsg{lines: direction(st, session.Notice{Title: "Nothing to rewind"}, w)}
	}
	var prompt string
	for _, r := range rows {
		if u, ok := r.Entry.(session.UserMessage); ok && r.Turn == last && u.Source == session.SourceUser {
			prompt = messageText(u.Parts)
			break
		}
	}
	// The files first: one changed outside meka refuses the whole rewind.
	res, err := s.RewindFiles(ctx, last-1, force)
	if err != nil && !errors.Is(err, host.ErrNoCheckpoints) {
		title := "rewind: " + err.Error()
		if errors.As(err, new(*host.FilesChangedError)) {
			title = "rewind refused: " + err.Error() + " (/rewind force overwrites them)"
		}
		return doneMsg{lines: direction(st, session.Notice{Severity: session.SeverityWarning, Title: title}, w)}
	}
	if err := s.Withdraw(ctx, last); err != nil {
		return doneMsg{lines: direction(st, session.Notice{Severity: session.SeverityWarning, Title: "rewind: " + err.Error()}, w)}
	}
	title := fmt.Sprintf("Rewound turn %d; its prompt is back in the composer", last)
	if n := len(res.Files); n > 0 {
		title = fmt.Sprintf("Rewound turn %d and put back %d files; its prompt is back in the composer", last, n)
	}
	return doneMsg{lines: direction(st, session.Notice{Title: title}, w), compose: prompt}
}

// turnFiles is /rewind files: each turn that changed files, and what it
// changed.
func turnFiles(ctx context.Context, s Session, w int) []string {
	turns, err := s.TurnFiles(ctx)
	if err != nil {
		return wrap("No file checkpoints: "+err.Error(), w, "  ")
	}
	if len(turns) == 0 {
		return []string{"No turn of this session has changed files."}
	}
	var out []string
	for _, t := range turns {
		head := fmt.Sprintf("Turn %d: %d files", t.Turn, len(t.Changes))
		if t.Pruned {
			head += " (pruned: cannot be rewound)"
		}
		out = append(out, head)
		for _, c := range t.Changes {
			out = append(out, wrap(c.Op+" "+c.Path, w, "    ")...)
		}
		for _, sk := range t.Skipped {
			out = append(out, wrap("skipped (too large) "+sk, w, "    ")...)
		}
	}
	return out
}

// statusBlock is /status: the host's block, which spends nothing, and
// says so.
func statusBlock(s Session) []string {
	return append(strings.Split(s.Status(), "\n"), "(answered here; no model call)")
}

// scheduleCommand is /schedule, /schedule show ID, /schedule cancel ID:
// this session's jobs only.
func (m *screen) scheduleCommand(ctx context.Context, args string) []string {
	return scheduleText(ctx, m.opts.Schedules, m.sess, args, m.opts.Now(), m.width)
}

func scheduleText(ctx context.Context, sc Schedules, s Session, args string, now time.Time, width int) []string {
	if sc == nil {
		return []string{"Scheduling is off ([schedule] enabled = false)."}
	}
	verb, id, _ := strings.Cut(args, " ")
	id = strings.TrimSpace(id)
	switch verb {
	case "cancel":
		if id == "" {
			return []string{"/schedule cancel ID"}
		}
		text, err := sc.Cancel(ctx, s.ID(), id)
		if err != nil {
			return []string{err.Error()}
		}
		return []string{text}
	case "", "show":
	default:
		return []string{"/schedule, /schedule show ID, /schedule cancel ID"}
	}
	jobs, err := sc.Jobs(ctx, s.ID())
	if err != nil {
		return []string{"list jobs: " + err.Error()}
	}
	if verb == "show" {
		if id == "" {
			return []string{"/schedule show ID"}
		}
		var found []schedule.Job
		for _, j := range jobs {
			if strings.HasPrefix(j.ID, strings.ToLower(id)) {
				found = append(found, j)
			}
		}
		switch len(found) {
		case 0:
			return []string{fmt.Sprintf("No job of this session has an id beginning %q.", id)}
		case 1:
			return showJob(found[0], sc.NotFiring(found[0], s.Level()), now)
		}
		return []string{fmt.Sprintf("%q is the beginning of several jobs' ids; give more of it.", id)}
	}
	if len(jobs) == 0 {
		return []string{"This session has no scheduled jobs."}
	}
	return jobTable(jobs, func(j schedule.Job) string {
		if sc.NotFiring(j, s.Level()) != "" {
			return "yes"
		}
		return ""
	}, now, width)
}

// jobTable is /schedule's table. Held is yes when the job cannot fire,
// blank when it will, ? when this process cannot tell.
func jobTable(jobs []schedule.Job, held func(schedule.Job) string, now time.Time, width int) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	short := schedule.UniquePrefixes(ids)
	promptCell := max(width-60, 12)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCHEDULE\tNEXT\tGATE\tHELD\tPROMPT")
	for i, j := range jobs {
		next := schedule.Until(j.NextAt, now, roughDuration)
		if j.Held != "" {
			next = "parked"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", short[i], fit(j.Brief(), 24), next, j.GateKind(), held(j), fit(oneLine(j.Prompt), promptCell))
	}
	tw.Flush()
	var out []string
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		out = append(out, fit(strings.TrimRight(l, " "), width))
	}
	return out
}

func showJob(j schedule.Job, notFiring string, now time.Time) []string {
	loc := j.Location()
	out := []string{
		"job: " + j.ID,
		"schedule: " + j.Describe(),
		fmt.Sprintf("next fire: %s (%s)", schedule.FormatTime(j.NextAt, loc), schedule.Until(j.NextAt, now, roughDuration)),
		"gate: " + gateDescription(j),
	}
	if !j.LastFiredAt.IsZero() {
		out = append(out, "last fired: "+schedule.FormatTime(j.LastFiredAt, loc))
	}
	if notFiring != "" {
		out = append(out, "NOT FIRING: "+notFiring)
	}
	out = append(out, "prompt: "+j.Prompt)
	return out
}

func gateDescription(j schedule.Job) string {
	g, err := j.ParsedGate()
	switch {
	case err != nil:
		return err.Error()
	case g == nil:
		return "none"
	}
	return g.Describe()
}

// roughDuration says a duration in its largest units: 12m, 1h 5m, 3d 2h.
func roughDuration(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func levelNames(ls []permission.Level) string {
	if len(ls) == 0 {
		return "none, read, workspace, unrestricted"
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.String()
	}
	return strings.Join(names, ", ")
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func (m *screen) skillNames() []string {
	if sl, ok := m.sess.(skillLister); ok {
		return sl.SkillNames()
	}
	return nil
}

func (m *screen) mcpPrompts() []host.MCPPrompt {
	if m.opts.MCP == nil {
		return nil
	}
	return m.opts.MCP.MCPPrompts()
}

// mcpPrompt reports text that invokes a connected MCP server's prompt:
// "/name" then its input. Built-in commands were matched first.
func (m *screen) mcpPrompt(text string) (name, input string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(text), "/")
	if !found {
		return "", "", false
	}
	name, input, _ = strings.Cut(rest, " ")
	for _, p := range m.mcpPrompts() {
		if p.Name == name {
			return name, strings.TrimSpace(input), true
		}
	}
	return "", "", false
}

// runMCPPrompt renders an MCP prompt off the screen's goroutine and sends
// it as the user's message; the screen says which prompt it was and shows
// the words typed, not the rendered text.
func (m *screen) runMCPPrompt(name, input, typed string) tea.Cmd {
	ctx, mcp := context.WithoutCancel(m.ctx), m.opts.MCP
	return func() tea.Msg {
		text, err := mcp.RenderMCPPrompt(ctx, name, input)
		return renderedMsg{name: name, typed: typed, text: text, err: err}
	}
}

func (m *screen) rendered(msg renderedMsg) tea.Cmd {
	if msg.err != nil {
		m.commit(direction(m.st, session.Notice{Severity: session.SeverityWarning, Title: "MCP prompt " + msg.name + ": " + msg.err.Error()}, m.width)...)
		m.giveBack(msg.typed)
		return nil
	}
	m.commit(direction(m.st, session.Notice{Title: "MCP prompt " + msg.name}, m.width)...)
	m.shown = msg.typed
	if m.busy || m.submitting != "" {
		m.queued = append(m.queued, msg.text)
		return nil
	}
	return m.start(msg.text)
}

// isPick reports /plan's pick.
func isPick(args string) bool {
	word, _, _ := strings.Cut(args, " ")
	return word == "pick"
}

// deferredIDs lists a plan's deferred items by id.
func deferredIDs(c plan.Changed) []string {
	var ids []string
	for _, it := range c.Items {
		if it.Status == plan.Deferred && it.ID != "" {
			ids = append(ids, it.ID)
		}
	}
	return ids
}

// pickUp is the message of /plan pick ID [words]: the person's words, or
// a line saying what they picked up, carrying the item to reopen (seed
// 000: a deferred item stays deferred until the agent or you pick it up).
func (m *screen) pickUp(args string) (session.UserMessage, error) {
	rest := strings.TrimSpace(strings.TrimPrefix(args, "pick"))
	id, words, _ := strings.Cut(rest, " ")
	c := currentPlan(m.sess)
	if len(c.Items) == 0 {
		c = m.plan
	}
	ids := deferredIDs(c)
	if id == "" {
		if len(ids) == 0 {
			return session.UserMessage{}, errors.New("nothing is deferred: /plan pick takes a deferred item's id")
		}
		return session.UserMessage{}, fmt.Errorf("/plan pick takes a deferred item's id: %s", strings.Join(ids, ", "))
	}
	if !slices.Contains(ids, id) {
		if len(ids) == 0 {
			return session.UserMessage{}, fmt.Errorf("%s is not deferred, and nothing else is; nothing was sent", id)
		}
		return session.UserMessage{}, fmt.Errorf("%s is not deferred (deferred: %s); nothing was sent", id, strings.Join(ids, ", "))
	}
	text := strings.TrimSpace(words)
	if text == "" {
		for _, it := range c.Items {
			if it.ID == id {
				text = fmt.Sprintf("I picked up %s (%s): it is open again; work on it now.", id, it.Text)
			}
		}
	}
	return session.UserMessage{Parts: model.Parts{model.Text{Text: text}}, Reopen: []string{id}}, nil
}

// contextReport is /context: every compaction with what it dropped, then
// what no compaction summarizes (the first message, pinned ones, the
// skills in use).
func contextReport(rows []session.Row, w int) []string {
	var out []string
	pinned, first := 0, false
	var skills []string
	for _, r := range rows {
		switch e := r.Entry.(type) {
		case session.Compaction:
			out = append(out, wrap(strings.ToUpper(e.Describe()[:1])+e.Describe()[1:]+".", w, "  ")...)
		case session.UserMessage:
			if e.Source != session.SourceUser && e.Source != session.SourceSchedule {
				continue
			}
			switch {
			case !first:
				first = true
			case e.Pinned:
				pinned++
			}
			if e.Command != "" && len(e.Expansion) > 0 && !slices.Contains(skills, e.Command) {
				skills = append(skills, e.Command)
			}
		}
	}
	if len(out) == 0 {
		out = wrap("No compaction yet.", w, "  ")
	}
	if !first {
		return out
	}
	keep := fmt.Sprintf("Kept verbatim through every compaction: the first message, %d pinned message(s)", pinned)
	if len(skills) > 0 {
		keep += ", skills " + strings.Join(skills, ", ")
	}
	keep += "; AGENTS.md and the environment are sent whole with every request."
	return append(out, wrap(keep, w, "  ")...)
}
