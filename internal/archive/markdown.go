package archive

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// WriteMarkdown writes s as a transcript a person reads: each turn's
// messages, tool calls with their arguments, results and notices.
func WriteMarkdown(w io.Writer, s Session) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	title := s.Meta.Title
	if title == "" {
		title = "Session " + s.Meta.ID
	}
	fmt.Fprintf(bw, "# %s\n\n", oneLine(title))
	fmt.Fprintf(bw, "- Session: `%s`\n- Directory: `%s`\n- Created: %s\n", s.Meta.ID, s.Meta.Cwd, s.Meta.CreatedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	if s.Meta.Profile != "" {
		fmt.Fprintf(bw, "- Profile: %s\n", s.Meta.Profile)
	}
	turn := int64(-1)
	for _, r := range s.Rows {
		if r.Turn != turn && r.Turn > 0 {
			turn = r.Turn
			fmt.Fprintf(bw, "\n## Turn %d\n", turn)
		}
		switch e := r.Entry.(type) {
		case session.SystemPrompt:
			fmt.Fprintf(bw, "\n<details><summary>System prompt</summary>\n\n%s\n</details>\n", fence(e.Text, ""))
		case session.ToolSet:
			var names []string
			for _, d := range e.Tools {
				names = append(names, "`"+d.Name+"`")
			}
			fmt.Fprintf(bw, "\n_Tools (%s): %s_\n", e.Source, strings.Join(names, ", "))
		case session.UserMessage:
			who := "User"
			switch e.Source {
			case session.SourceSteer:
				who = "User (steer)"
			case session.SourceSchedule:
				who = "Scheduled prompt"
			case session.SourceTask:
				who = "Task report"
			case session.SourceReminder:
				who = "Reminder"
			}
			fmt.Fprintf(bw, "\n**%s**\n\n%s\n", who, partsText(e.Parts))
		case session.AssistantMessage:
			if text := partsText(e.Parts); text != "" {
				fmt.Fprintf(bw, "\n**Assistant**\n\n%s\n", text)
			}
			for _, p := range e.Parts {
				if c, ok := p.(model.ToolCall); ok {
					fmt.Fprintf(bw, "\n→ `%s` (%s)\n\n%s\n", c.Name, c.ID, fence(prettyJSON(c.Arguments), "json"))
				}
			}
		case session.ToolResult:
			fmt.Fprintf(bw, "\n← `%s` %s\n\n%s\n", e.Name, e.Status, fence(model.Message{Parts: e.Content}.Text(), ""))
		case session.Notice:
			line := e.Title
			if e.Description != "" {
				line += ": " + e.Description
			}
			fmt.Fprintf(bw, "\n> **%s** %s\n", e.Severity, oneLine(line))
		case session.Compaction:
			fmt.Fprintf(bw, "\n---\n\n_The conversation before was compacted:_\n\n%s\n\n---\n", e.Summary)
		}
	}
	return bw.Flush()
}

func partsText(ps model.Parts) string {
	var b strings.Builder
	for _, p := range ps {
		switch p := p.(type) {
		case model.Text:
			b.WriteString(p.Text)
		case model.Image:
			fmt.Fprintf(&b, "[image %s]", p.Name)
		case model.Resource:
			fmt.Fprintf(&b, "[@%s](%s)", p.Name, p.URI)
		}
	}
	return strings.TrimSpace(b.String())
}

// fence puts text in a code fence longer than any run of backticks in it.
func fence(text, lang string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + ticks
}

func prettyJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
