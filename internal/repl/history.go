package repl

import (
	"fmt"
	"io"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// History writes the newest n rows of a reopened session as the live run
// said them (`meka -c`, `meka -r ID`), before the screen starts: what was
// typed, the replies, finished calls, stage directions and compactions
// where they happened. Reminders and task reports are never shown; a
// report replays as its stage direction.
func History(w io.Writer, rows []session.Row, n, width int, color bool) {
	if n <= 0 || len(rows) == 0 {
		return
	}
	if len(rows) > n {
		rows = rows[len(rows)-n:]
	}
	st := styles{color: color}
	var out []string
	calls := map[string]string{} // call id -> title
	for _, r := range rows {
		switch en := r.Entry.(type) {
		case session.UserMessage:
			switch en.Source {
			case session.SourceReminder:
			case session.SourceTask:
				out = append(out, direction(st, session.Notice{Title: taskDirection(en.Tasks)}, width)...)
			case session.SourceSchedule:
				prompt, header := scheduledParts(en.Parts)
				out = append(out, direction(st, session.Notice{Title: header}, width)...)
				out = append(out, userLines(prompt, width)...)
			default:
				out = append(out, userLines(messageText(en.Parts), width)...)
			}
		case session.AssistantMessage:
			for _, p := range en.Parts {
				switch p := p.(type) {
				case model.Text:
					if t := strings.TrimSpace(p.Text); t != "" {
						out = append(out, wrap(t, width, "")...)
					}
				case model.ToolCall:
					calls[p.ID] = p.Name
				}
			}
		case session.ToolResult:
			c := card{name: en.Name, title: calls[en.CallID], status: en.Status, output: resultText(en), change: en.Change}
			if c.title == "" {
				c.title = en.Name
			}
			out = append(out, c.finished(st, width)...)
		case session.Notice:
			out = append(out, direction(st, en, width)...)
		case session.HookRun:
			out = append(out, direction(st, en.Notice(), width)...)
		case session.Compaction:
			out = append(out, direction(st, session.Notice{Title: fmt.Sprintf("Compacted: the turns before turn %d are summarized for the model", en.KeptFrom)}, width)...)
		}
	}
	for _, l := range out {
		fmt.Fprintln(w, l)
	}
}

// taskDirection is the stage direction a background report replays as.
func taskDirection(ids []string) string {
	switch len(ids) {
	case 0:
		return "A background task finished"
	case 1:
		return "Background task " + ids[0] + " finished"
	}
	return "Background tasks " + strings.Join(ids, ", ") + " finished"
}
