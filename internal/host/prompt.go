package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"meka.dev/meka/internal/prompt"
	"meka.dev/meka/internal/skills"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

const preamble = `You are meka, a coding agent working in the user's workspace. You read, edit and run things with the tools you are given, and you finish what you set out to do: when you say you will do something, do it, or say plainly why not.`

// PromptOptions say where a session's system prompt finds its parts.
type PromptOptions struct {
	// UserDir is meka's config directory ($XDG_CONFIG_HOME/meka): its
	// AGENTS.md comes before the project's and its skills directory holds
	// the user's skills.
	UserDir string
	// Home is the user's home directory, for ~/.claude/skills.
	Home string
	// Fallbacks are more instruction file names ([instructions]
	// fallback_files); MaxBytes bounds the instructions (default 32 KiB).
	Fallbacks []string
	MaxBytes  int
	// Location is the zone dates are given in ([schedule] timezone);
	// time.Local when nil.
	Location *time.Location
	// Shell names what shell commands run with; default "sh".
	Shell string
	Git   prompt.GitOptions
}

// skillStore is meka's own skill directory: the skills skill_write writes.
func (h *Host) skillStore() string {
	if h.opts.DataDir == "" {
		return ""
	}
	return filepath.Join(h.opts.DataDir, "skills")
}

func (h *Host) instructionOptions(cwd string) prompt.InstructionOptions {
	o := prompt.InstructionOptions{Cwd: cwd, Fallbacks: h.opts.Prompt.Fallbacks, MaxBytes: h.opts.Prompt.MaxBytes}
	if h.opts.Prompt.UserDir != "" {
		o.UserFile = filepath.Join(h.opts.Prompt.UserDir, prompt.AgentsName)
	}
	return o
}

// discoverSkills finds the skills of a session in cwd, project first.
func (h *Host) discoverSkills(cwd string) ([]skills.Skill, []skills.Problem) {
	return skills.Discover(prompt.SkillLocations(cwd, h.opts.Prompt.UserDir, h.opts.Prompt.Home, h.skillStore()))
}

// allows says what a level lets tools do, for the model.
func allows(l permission.Level) string {
	switch l {
	case permission.None:
		return "no tool may run"
	case permission.Read:
		return "read anywhere; shell commands write only to their temp directory"
	case permission.Workspace:
		return "read anywhere; write only inside the workspace directories"
	}
	return "read and write anywhere the user can"
}

// promptOptions describe a fresh system prompt for a session, as of now.
func (h *Host) promptOptions(meta session.Meta, prof Profile, level permission.Level, list []skills.Skill) prompt.Options {
	po := h.opts.Prompt
	o := prompt.Options{
		Preamble:      preamble,
		Instructions:  h.instructionOptions(meta.Cwd),
		Roots:         meta.AdditionalDirs,
		OS:            runtime.GOOS + "/" + runtime.GOARCH,
		Shell:         po.Shell,
		Now:           h.opts.Now(),
		Location:      po.Location,
		Permission:    level.String() + " when the session started",
		Allows:        allows(level),
		Model:         prof.Model,
		ContextWindow: prof.ContextWindow,
		Git:           po.Git,
		Skills:        list,
	}
	if h.opts.System != "" {
		o.Preamble = h.opts.System
	}
	if o.Shell == "" {
		o.Shell = "sh"
	}
	return o
}

// recordedPrompt returns the last system prompt a session's log records.
func recordedPrompt(rows []session.Row) (session.SystemPrompt, bool) {
	for i := len(rows) - 1; i >= 0; i-- {
		if p, ok := rows[i].Entry.(session.SystemPrompt); ok {
			return p, true
		}
	}
	return session.SystemPrompt{}, false
}

// sessionPrompt is the system prompt a session's requests start with.
// The recorded one is taken while it still describes the session (same
// directories, same day, no reload asked). Otherwise a fresh one is built
// in the background, since git may take tens of milliseconds that opening
// a session (an editor's session/new) should not wait for; the engine's
// prelude waits for it before the first turn and records it then, with
// notices for skills that were skipped, so the log holds exactly what the
// model was sent, git state included. extra (a sub-agent's framing) is
// part of what is recorded. The client's addition is the recorded one,
// or added when set; a changed addition builds a fresh prompt.
type sessionPrompt struct {
	done   chan struct{}
	cancel context.CancelFunc
	// reused says rec is the recorded prompt, taken as it is.
	reused bool
	// client is the client's addition the prompt carries, known at once.
	client string
	rec    session.SystemPrompt // set before done is closed
	// record is what the prelude stores.
	record []session.Entry
}

// wait returns the prompt once it is built.
func (p *sessionPrompt) wait() session.SystemPrompt {
	<-p.done
	return p.rec
}

// stop cancels a build still running (its git commands) and waits for it.
func (p *sessionPrompt) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}

// prelude is the engine's Options.Prelude for a fresh prompt.
func (p *sessionPrompt) prelude(ctx context.Context) (string, []session.Entry, error) {
	select {
	case <-p.done:
		return p.rec.Text, p.record, nil
	case <-ctx.Done():
		return "", nil, context.Cause(ctx)
	}
}

func (h *Host) sessionPrompt(meta session.Meta, level permission.Level, prof Profile, rows []session.Row, fresh bool, list []skills.Skill, problems []skills.Problem, extra string, added *string) *sessionPrompt {
	loc := h.opts.Prompt.Location
	if loc == nil {
		loc = time.Local
	}
	day := h.opts.Now().In(loc).Format(time.DateOnly)
	rec, ok := recordedPrompt(rows)
	client := rec.Client
	if added != nil {
		client = *added
	}
	if ok && !fresh && rec.Cwd == meta.Cwd && slices.Equal(rec.Roots, meta.AdditionalDirs) && rec.Day == day && rec.Client == client {
		p := &sessionPrompt{done: make(chan struct{}), cancel: func() {}, reused: true, client: client, rec: rec}
		close(p.done)
		return p
	}
	o := h.promptOptions(meta, prof, level, list)
	// Git is bounded by Options.Git.Timeout; closing the session cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	p := &sessionPrompt{done: make(chan struct{}), cancel: cancel, client: client}
	go func() {
		defer close(p.done)
		defer cancel()
		built := prompt.Build(ctx, o)
		rec := session.SystemPrompt{Text: built.Text + extra + clientSection(client), Client: client, Cwd: meta.Cwd, Roots: meta.AdditionalDirs, Day: built.Day}
		for _, f := range built.Files {
			rec.Files = append(rec.Files, f.String())
		}
		p.rec = rec
		p.record = []session.Entry{rec}
		for _, n := range skillNotices(problems) {
			p.record = append(p.record, n)
		}
	}()
	return p
}

// clientSection is a client's addition as the end of the system prompt:
// after meka's own instructions, at the same (system) level.
func clientSection(client string) string {
	if client == "" {
		return ""
	}
	return "\n\n# Instructions from the client\n\n" + client
}

// ClientPrompt is the client's addition the session's system prompt
// carries, "" for none.
func (s *Session) ClientPrompt() string { return s.prompt.client }

func skillNotices(problems []skills.Problem) []session.Notice {
	var out []session.Notice
	for _, pr := range problems {
		out = append(out, session.Notice{Severity: session.SeverityWarning, Title: "Skill skipped: " + pr.Path, Description: pr.Err.Error()})
	}
	return out
}

// StartNotices are what a front door says when the session opens: the
// skills that were skipped, naming their files.
func (s *Session) StartNotices() []session.Notice { return slices.Clone(s.startNotices) }

// Instructions lists the instruction files the session's prompt loaded,
// as /status shows them.
func (s *Session) Instructions() []string { return slices.Clone(s.prompt.wait().Files) }

// SystemPrompt returns the system prompt the session's requests start with.
func (s *Session) SystemPrompt() string { return s.prompt.wait().Text }

// Skills lists the skills a person may invoke in this session, found now
// (a skill installed mid-session shows up), sorted by name.
func (s *Session) Skills() []skills.Skill {
	list, _ := s.h.discoverSkills(s.Meta().Cwd)
	return list
}

// Reload closes a session (after its turn) and opens it again with a
// freshly built system prompt: changed instructions, skills and git state
// apply from its next request.
func (h *Host) Reload(ctx context.Context, id string) (*Session, error) {
	h.mu.Lock()
	h.reload[id] = true
	h.mu.Unlock()
	s, err := h.Reopen(ctx, id)
	h.mu.Lock()
	delete(h.reload, id)
	h.mu.Unlock()
	return s, err
}

func (h *Host) takeReload(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reload[id]
}

// expandSkill turns a person's "/name words" into the invocation of skill
// name: the message keeps what they typed and gains the skill's body as
// its expansion. Anything else, a name no skill has included, is returned
// unchanged, for the model to read as typed.
func (s *Session) expandSkill(msg session.UserMessage) (session.UserMessage, error) {
	if msg.Source != session.SourceUser || msg.Command != "" || len(msg.Parts) == 0 {
		return msg, nil
	}
	t, ok := msg.Parts[0].(model.Text)
	if !ok {
		return msg, nil
	}
	name, ok := SkillCommand(t.Text)
	if !ok {
		return msg, nil
	}
	sk, ok := skills.Find(s.Skills(), name)
	if !ok {
		// A skill that exists but cannot be read is an error; any other
		// miss is text for the model (a pasted /usr/lib).
		_, problems := s.h.discoverSkills(s.Meta().Cwd)
		for _, p := range problems {
			if errors.Is(p.Err, skills.ErrUnreadable) && filepath.Base(filepath.Dir(p.Path)) == name {
				return msg, fmt.Errorf("invoke skill %s: %w", name, p)
			}
		}
		s.h.opts.Logger.Debug("slash command is no skill; passed to the model", "session_id", s.id, "command", name)
		return msg, nil
	}
	msg.Command = name
	// The engine carries an invoked skill's body through compactions
	// itself (verbatim, checkpointed); loaded only counts skill calls.
	msg.Expansion = model.Parts{model.Text{Text: skillText(sk)}}
	return msg, nil
}

// SkillCommand reports the skill name a prompt opens with ("/name" then
// a space, a newline or the end), if it is a valid skill name.
func SkillCommand(text string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimLeft(text, " \t"), "/")
	if !ok {
		return "", false
	}
	name := rest
	if i := strings.IndexAny(rest, " \t\n"); i >= 0 {
		name = rest[:i]
	}
	return name, skills.ValidName(name)
}

// skillText is what the model reads for a skill: its body and the list
// of its other files.
func skillText(sk skills.Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Skill %s, from %s]\n\n%s", sk.Name, sk.Path, sk.Body)
	if files := sk.Files(0); len(files) > 0 {
		fmt.Fprintf(&b, "\n\nOther files of this skill (read them from %s as you need them):\n", sk.Dir)
		for _, f := range files {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// attachTool wraps file_read and file_edit so that their first result
// touching a directory below the cwd carries that directory's
// instructions.
type attachTool struct {
	tool.Tool
	attacher *prompt.Attacher
}

func (a *attachTool) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	r, err := a.Tool.Run(ctx, c)
	if err != nil || r.IsError {
		return r, err
	}
	var args struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Arguments, &args) == nil && args.Path != "" {
		if text := a.attacher.Attach(args.Path); text != "" {
			r.Content = append(slices.Clone(r.Content), model.Text{Text: strings.TrimLeft(text, "\n")})
		}
	}
	return r, nil
}

func (a *attachTool) Title(args json.RawMessage) string { return tool.Title(a.Tool, args) }

func (a *attachTool) Locations(args json.RawMessage, cwd string) []tool.Location {
	return tool.Locations(a.Tool, args, cwd)
}

// CallLevel passes the wrapped tool's: without it, a file_read outside the
// roots would be checked at file_read's own level and never put to the
// user, only refused when it ran.
func (a *attachTool) CallLevel(c tool.Call) permission.Level {
	if cl, ok := a.Tool.(tool.CallLeveler); ok {
		return cl.CallLevel(c)
	}
	return a.Tool.Spec().Level
}

// attachInstructions wraps the tools that attach subdirectory
// instructions; the files earlier results attached are not attached again.
func attachInstructions(ts []tool.Tool, o prompt.InstructionOptions, rows []session.Row) []tool.Tool {
	a := prompt.NewAttacher(o)
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok && (tr.Name == "file_read" || tr.Name == "file_edit") {
			for _, p := range tr.Content {
				if t, ok := p.(model.Text); ok {
					a.Seen(t.Text)
				}
			}
		}
	}
	out := make([]tool.Tool, len(ts))
	for i, t := range ts {
		switch t.Spec().Name {
		case "file_read", "file_edit":
			out[i] = &attachTool{Tool: t, attacher: a}
		default:
			out[i] = t
		}
	}
	return out
}
