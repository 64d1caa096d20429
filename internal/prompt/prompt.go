// Package prompt assembles a session's system prompt: the preamble, the
// project instructions (AGENTS.md found the way Codex finds it), the
// environment block (directories, OS and shell, date and zone, git state,
// permission, context window) and the list of skills the model may load.
//
// The host builds it when a session is created, resumed in another place
// or reloaded, and records it in the session's log, so that every request
// of a session starts with the same bytes. It imports internal/skills; it
// runs git, bounded in time, and nothing else.
package prompt

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"meka.dev/meka/internal/skills"
)

// Options describe what the system prompt says. The zero value of each
// field leaves its part out or takes its default.
type Options struct {
	// Preamble opens the prompt: who the model is and how it works.
	Preamble     string
	Instructions InstructionOptions
	// Roots are the workspace directories beside the cwd.
	Roots []string
	// OS and Shell describe the machine ("linux/amd64", "sh").
	OS, Shell string
	// Now is when the session started; Location its zone (time.Local when
	// nil), shown by IANA name.
	Now      time.Time
	Location *time.Location
	// Permission is the session's level; Allows says what it lets tools do.
	Permission, Allows string
	Model              string
	ContextWindow      int
	// Git bounds the git commands that describe the repository.
	Git GitOptions
	// Skills are the skills the model may load with the skill tool.
	Skills []skills.Skill
}

// Prompt is an assembled system prompt and what went into it.
type Prompt struct {
	Text  string
	Files []File
	// Day is the date the prompt states, in its zone (2006-01-02): a
	// session resumed on another day gets a new prompt.
	Day string
	// Skills names the skills listed; Unlisted counts those the budget left
	// off the list.
	Skills   []string
	Unlisted int
}

// Build assembles the system prompt. Git is the only thing it waits for,
// and for no longer than Options.Git.Timeout.
func Build(ctx context.Context, o Options) Prompt {
	in := LoadInstructions(o.Instructions)
	var b strings.Builder
	b.WriteString(strings.TrimSpace(o.Preamble))
	if in.Text != "" {
		b.WriteString("\n\n# Project instructions\n\nFollow these instructions from the user and the project; a file nearer the working directory takes precedence.\n\n")
		b.WriteString(in.Text)
	}
	loc := o.Location
	if loc == nil {
		loc = time.Local
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.In(loc)
	b.WriteString("\n\n# Environment\n")
	fmt.Fprintf(&b, "Working directory: %s\n", o.Instructions.Cwd)
	if len(o.Roots) > 0 {
		fmt.Fprintf(&b, "Other workspace directories (the file tools cover them too): %s\n", strings.Join(o.Roots, ", "))
	}
	if o.OS != "" {
		fmt.Fprintf(&b, "OS: %s", o.OS)
		if o.Shell != "" {
			fmt.Fprintf(&b, "; shell commands run with %s", o.Shell)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Session started: %s (time zone %s, UTC%s); absolute times you give tools are read in this zone\n",
		now.Format("Monday 2006-01-02 15:04"), zoneName(loc), now.Format("-07:00"))
	b.WriteString(gitBlock(ctx, o.Instructions.Cwd, o.Git))
	if o.Permission != "" {
		fmt.Fprintf(&b, "Permission level: %s", o.Permission)
		if o.Allows != "" {
			fmt.Fprintf(&b, " (%s)", o.Allows)
		}
		b.WriteString("\n")
	}
	if o.Model != "" {
		fmt.Fprintf(&b, "Model: %s\n", o.Model)
	}
	if o.ContextWindow > 0 {
		fmt.Fprintf(&b, "Context window: %d tokens\n", o.ContextWindow)
	}
	p := Prompt{Files: in.Files, Day: now.Format(time.DateOnly)}
	if list, names, left := SkillList(o.Skills, o.ContextWindow); list != "" {
		b.WriteString("\n")
		b.WriteString(list)
		p.Skills, p.Unlisted = names, left
	}
	p.Text = strings.TrimSpace(b.String())
	return p
}

// zoneName is loc's IANA name; "Local" is named by what the TZ database
// calls it where that is known.
func zoneName(loc *time.Location) string {
	if n := loc.String(); n != "Local" {
		return n
	}
	if l, err := filepath.EvalSymlinks("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(l, "zoneinfo/"); ok {
			return name
		}
	}
	return "Local"
}

// SkillListMax is the most bytes the skill list takes, and SkillListShare
// the most share of the context window.
const (
	SkillListMax   = 8 << 10
	SkillListShare = 0.02
)

// SkillList renders the skills the model may load, within the smaller of
// SkillListMax bytes and 2% of the context window (at about 4 bytes a
// token); it returns the names listed and how many did not fit.
func SkillList(list []skills.Skill, window int) (string, []string, int) {
	budget := SkillListMax
	if window > 0 {
		budget = min(budget, int(float64(window)*SkillListShare*4))
	}
	var b strings.Builder
	const head = "# Skills\nLoad one with the skill tool when a task matches its description:\n"
	var names []string
	left := 0
	for _, s := range list {
		if s.DisableModelInvocation {
			continue
		}
		line := fmt.Sprintf("- %s: %s\n", s.Name, oneLine(s.Description))
		if b.Len() == 0 && len(head) > budget {
			left++
			continue
		}
		if len(head)+b.Len()+len(line) > budget {
			left++
			continue
		}
		b.WriteString(line)
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return "", nil, left
	}
	out := head + b.String()
	if left > 0 {
		out += fmt.Sprintf("(%d more skills are not listed; the user can invoke them by name.)\n", left)
	}
	return out, names, left
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// SkillLocations are where skills are found for a session in cwd, the
// ones that win first: .agents/skills, .meka/skills and .claude/skills
// from the cwd up to the project root, then the user's (configDir/skills,
// home/.claude/skills), then meka's own store. Empty arguments are left
// out.
func SkillLocations(cwd, configDir, home, store string) []skills.Location {
	var locs []skills.Location
	chain := Chain(cwd)
	for i := len(chain) - 1; i >= 0; i-- {
		for _, sub := range []string{".agents", ".meka", ".claude"} {
			locs = append(locs, skills.Location{Dir: filepath.Join(chain[i], sub, "skills"), Source: "project"})
		}
	}
	if configDir != "" {
		locs = append(locs, skills.Location{Dir: filepath.Join(configDir, "skills"), Source: "user"})
	}
	if home != "" {
		locs = append(locs, skills.Location{Dir: filepath.Join(home, ".claude", "skills"), Source: "user"})
	}
	if store != "" {
		locs = append(locs, skills.Location{Dir: store, Source: "meka"})
	}
	return locs
}
