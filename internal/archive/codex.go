package archive

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

type codexLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	// session_meta and turn_context
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	Model     string `json:"model"`
}

// ReadCodex reads a Codex rollout file. Messages, calls and their outputs
// come from response_item lines only (event_msg lines repeat them for the
// UI); the context Codex injects as user messages (<environment_context>,
// <user_instructions>) is not the user's words and is left out, and so is
// reasoning, which is encrypted or summarised.
func ReadCodex(r io.Reader) (Session, error) {
	b := newBuilder()
	var cwd, id string
	var open *session.AssistantMessage
	var openAt time.Time
	flush := func() {
		if open != nil {
			for _, p := range open.Parts {
				if _, ok := p.(model.ToolCall); ok {
					open.Stop = model.StopToolUse
				}
			}
			b.assistant(openAt, *open)
			open = nil
		}
	}
	response := func(at time.Time) *session.AssistantMessage {
		if open == nil {
			open, openAt = &session.AssistantMessage{Stop: model.StopEndTurn}, at
		}
		return open
	}
	err := eachLine(r, func(raw []byte) error {
		var l codexLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("not a Codex rollout line: %v", err)
		}
		if l.Type == "" {
			return fmt.Errorf("a line without a type")
		}
		at := parseTime(l.Timestamp)
		var it codexItem
		switch l.Type {
		case "session_meta", "turn_context", "response_item":
			if err := json.Unmarshal(l.Payload, &it); err != nil {
				return fmt.Errorf("%s payload: %v", l.Type, err)
			}
		default:
			return nil // event_msg, compacted and newer kinds
		}
		switch l.Type {
		case "session_meta":
			if cwd == "" {
				cwd = it.Cwd
			}
			if id == "" {
				id = cmp.Or(it.ID, it.SessionID)
			}
			return nil
		case "turn_context":
			if it.Model != "" {
				b.model = it.Model
			}
			return nil
		}
		switch it.Type {
		case "message":
			var parts []string
			for _, c := range it.Content {
				if c.Text != "" {
					parts = append(parts, c.Text)
				}
			}
			text := strings.Join(parts, "\n")
			switch it.Role {
			case "user":
				if injected(text) || strings.TrimSpace(text) == "" {
					return nil
				}
				flush()
				b.user(at, text)
			case "assistant":
				if text != "" {
					m := response(at)
					m.Parts = append(m.Parts, model.Text{Text: text})
				}
			}
		case "function_call", "custom_tool_call", "local_shell_call":
			if it.CallID == "" {
				return fmt.Errorf("a %s without a call_id", it.Type)
			}
			name, args := it.Name, it.Arguments
			switch it.Type {
			case "custom_tool_call":
				args = it.Input
			case "local_shell_call":
				name, args = "local_shell", it.Action
			}
			if name == "" {
				return fmt.Errorf("a %s without a name", it.Type)
			}
			m := response(at)
			m.Parts = append(m.Parts, model.ToolCall{ID: it.CallID, Name: name, Arguments: objectArgs(args)})
		case "function_call_output", "custom_tool_call_output":
			flush()
			text, failed := codexOutput(it.Output)
			b.result(at, it.CallID, text, failed)
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	flush()
	return b.session("Codex", id, cwd)
}

// injected reports context Codex puts in user messages itself.
func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, tag := range []string{"<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md instructions"} {
		if strings.HasPrefix(t, tag) {
			return true
		}
	}
	return false
}

// codexOutput reads a call's output: a string, or {content, success}.
func codexOutput(raw json.RawMessage) (text string, failed bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, false
	}
	var o struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if json.Unmarshal(raw, &o) == nil && len(o.Content) > 0 {
		return textOf(o.Content), o.Success != nil && !*o.Success
	}
	return string(raw), false
}
