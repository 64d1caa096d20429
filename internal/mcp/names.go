package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxNameLen is the longest tool name providers accept.
const MaxNameLen = 64

// ToolName returns the meka name of a server's tool: mcp__<server>__<tool>
// with every character outside [A-Za-z0-9_-] replaced by '_', cut to
// MaxNameLen. A cut name ends in a hash of the whole, so that two long
// names that share a beginning stay apart.
func ToolName(server, tool string) string {
	return qualified(server, tool)
}

// PromptName is ToolName for a prompt: the slash command that invokes it
// is "/" followed by it.
func PromptName(server, prompt string) string {
	return qualified(server, prompt)
}

func qualified(server, name string) string {
	full := "mcp__" + sanitize(server) + "__" + sanitize(name)
	if len(full) <= MaxNameLen {
		return full
	}
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return full[:MaxNameLen-len(suffix)] + suffix
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
