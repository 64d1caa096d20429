package acp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
)

// This file holds the slash commands meka answers itself, with no model
// call: /status, /mcp, /hooks, /usage, /memories, /reload and /compact.

var builtinCommands = []AvailableCommand{
	{Name: "status", Description: "Show the session's permission level, profile, model, context usage and tokens"},
	{Name: "mcp", Description: "Show the configured MCP servers and their connection status"},
	{Name: "hooks", Description: "Show the hooks this session runs and where each comes from"},
	{Name: "usage", Description: "Show the account's rate-limit windows (subscription backends only)"},
	{Name: "memories", Description: "Show the memories this session sees: its project's, or yours on no project"},
	{Name: "reload", Description: "Read AGENTS.md, skills and the environment again for the next request"},
	{Name: "compact", Description: "Summarize older turns now; the first message, pinned messages and skills in use stay verbatim",
		Input: &AvailableCommandInput{Hint: "what the summary should keep in particular (optional)"}},
	{Name: "rewind", Description: "List what each turn changed in the files, or put the files back as after turn N (the conversation stays)",
		Input: &AvailableCommandInput{Hint: "N to put the files back as after turn N, N force to overwrite files changed outside meka; nothing lists the turns"}},
}

// commands is the palette: the built-in commands, then the skills hs
// finds now, except one named like a built-in, which cannot shadow it.
func commands(hs *host.Session) []AvailableCommand {
	out := append([]AvailableCommand(nil), builtinCommands...)
	if hs == nil {
		return out
	}
	for _, sk := range hs.Skills() {
		if isBuiltin(sk.Name) {
			continue
		}
		out = append(out, AvailableCommand{Name: sk.Name, Description: sk.Description,
			Input: &AvailableCommandInput{Hint: "additional context (optional)"}})
	}
	return out
}

func isBuiltin(name string) bool {
	for _, c := range builtinCommands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// localCommand reports a prompt that is exactly a built-in command, and
// the words after it for one that takes them (/compact focus). A command
// followed by words it does not take, or sent with anything but an
// image, goes to the model as typed; with an image it is refused by the
// caller.
func localCommand(blocks []ContentBlock) (name, args string, ok bool) {
	if len(blocks) == 0 || blocks[0].Type != "text" {
		return "", "", false
	}
	name, ok = strings.CutPrefix(strings.TrimSpace(blocks[0].Text), "/")
	if !ok {
		return "", "", false
	}
	if n, rest, cut := strings.Cut(name, " "); cut && (n == "compact" || n == "rewind") {
		name, args = n, strings.TrimSpace(rest)
	}
	if !isBuiltin(name) {
		return "", "", false
	}
	for _, b := range blocks[1:] {
		switch {
		case b.Type == "image":
			return name, args, true // refused: nothing would read the image
		case b.Type == "text" && strings.TrimSpace(b.Text) == "":
		default:
			return "", "", false
		}
	}
	return name, args, true
}

// compactNow is /compact: the compaction itself is told as every
// compaction is (compaction_update, or a card), and the reply says how it
// ended.
func (e *entry) compactNow(ctx context.Context, focus string) *PromptResponse {
	err := e.session().CompactFocus(ctx, focus)
	var text string
	switch {
	case ctx.Err() != nil:
		return &PromptResponse{StopReason: "cancelled", Usage: usage(model.Usage{})}
	case errors.Is(err, agent.ErrNothingToCompact):
		text = "Nothing to compact: only the current turn is in the context."
	case err != nil:
		e.s.log.Error("acp: /compact", "session_id", e.id, "err", err)
		text = "The compaction failed; the conversation is unchanged."
	default:
		text = "Compacted: older turns are summarized for the model; the first message, pinned messages and skills in use are kept verbatim."
	}
	e.s.notify(ctx, e.id, ContentChunk{Tag: TagAgentMessage, Content: TextBlock(text)})
	return &PromptResponse{StopReason: "end_turn", Usage: usage(model.Usage{})}
}

// runLocal answers a built-in command as an agent_message_chunk and ends
// the turn; it spends nothing and says so.
func (e *entry) runLocal(ctx context.Context, cmd, args string) *PromptResponse {
	var text string
	switch cmd {
	case "rewind":
		text = e.rewindFiles(ctx, args)
	case "status":
		text = e.status()
	case "mcp":
		text = e.s.host.MCPReport()
	case "hooks":
		text = e.session().HooksReport()
	case "reload":
		next, err := e.s.host.Reload(ctx, e.id)
		if err != nil {
			e.s.log.Error("acp: /reload", "session_id", e.id, "err", err)
			text = "The session could not be reloaded; it goes on with the prompt it had."
			break
		}
		e.attach(next)
		text = "Reloaded: the next request reads the instructions, skills and environment as they are now."
		if files := next.Instructions(); len(files) > 0 {
			text += "\nInstructions: " + strings.Join(files, ", ")
		}
	case "memories":
		t, err := e.session().Memories(ctx)
		if err != nil {
			e.s.log.Error("acp: /memories", "session_id", e.id, "err", err)
			t = "The memories could not be read."
		}
		text = strings.TrimRight(t, "\n")
	case "usage":
		text = "Rate-limit windows are reported only for subscription backends; this session's profile (" + e.session().Profile().Name + ") uses an API key, so there are none to show."
	}
	e.s.notify(ctx, e.id, ContentChunk{Tag: TagAgentMessage, Content: TextBlock(text)})
	return &PromptResponse{StopReason: "end_turn", Usage: usage(model.Usage{})}
}

// status is the host's /status block, the screen's too.
func (e *entry) status() string { return e.session().Status() }

// rewindFiles is /rewind: without words, what each turn changed in the
// files; with N (and force), the files put back as after turn N. An ACP
// client keeps its own transcript and cannot drop messages from it, so
// the conversation stays as it is; the files are the part the editor
// cannot undo by itself.
func (e *entry) rewindFiles(ctx context.Context, args string) string {
	hs := e.session()
	words := strings.Fields(args)
	if len(words) == 0 {
		turns, err := hs.TurnFiles(ctx)
		if err != nil {
			return "No file checkpoints: " + err.Error()
		}
		if len(turns) == 0 {
			return "No turn of this session has changed files."
		}
		var b strings.Builder
		for _, t := range turns {
			fmt.Fprintf(&b, "Turn %d: %d files", t.Turn, len(t.Changes))
			if t.Pruned {
				b.WriteString(" (pruned: cannot be rewound)")
			}
			b.WriteString("\n")
			for _, c := range t.Changes {
				fmt.Fprintf(&b, "  %s %s\n", c.Op, c.Path)
			}
		}
		return strings.TrimRight(b.String(), "\n") + "\n/rewind N puts the files back as after turn N."
	}
	n, err := strconv.ParseInt(words[0], 10, 64)
	if err != nil || n < 0 || len(words) > 2 || len(words) == 2 && words[1] != "force" {
		return "/rewind takes a turn number N, then force to overwrite files changed outside meka: /rewind 2, /rewind 2 force."
	}
	res, err := hs.RewindFiles(ctx, n, len(words) == 2)
	switch {
	case errors.As(err, new(*host.FilesChangedError)):
		return "Refused: " + err.Error() + ". /rewind " + words[0] + " force overwrites them."
	case err != nil:
		return "The files could not be rewound: " + err.Error()
	case len(res.Files) == 0:
		return fmt.Sprintf("Nothing to put back: the files are as they were after turn %d.", n)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Put the files back as after turn %d:\n", n)
	for _, c := range res.Files {
		fmt.Fprintf(&b, "  %s %s\n", c.Op, c.Path)
	}
	fmt.Fprintf(&b, "The conversation is unchanged. meka sessions rewind %s --undo %d puts these files back.", e.id, res.Undo)
	return b.String()
}
