package acp

import (
	"context"
	"errors"
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
	if n, rest, cut := strings.Cut(name, " "); cut && n == "compact" {
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
func (e *entry) runLocal(ctx context.Context, cmd string) *PromptResponse {
	var text string
	switch cmd {
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
