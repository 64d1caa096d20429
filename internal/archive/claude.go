package archive

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// claudeLine is one line of a Claude Code session file. Lines other than
// user and assistant ones (summary, system, file-history-snapshot, …)
// vary by version and are passed over.
type claudeLine struct {
	Type        string  `json:"type"`
	UUID        string  `json:"uuid"`
	ParentUUID  *string `json:"parentUuid"`
	IsSidechain bool    `json:"isSidechain"`
	IsMeta      bool    `json:"isMeta"`
	SessionID   string  `json:"sessionId"`
	Timestamp   string  `json:"timestamp"`
	Cwd         string  `json:"cwd"`
	Message     *struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
		Usage   *struct {
			Input      int `json:"input_tokens"`
			Output     int `json:"output_tokens"`
			CacheRead  int `json:"cache_read_input_tokens"`
			CacheWrite int `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`

	line int
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ReadClaude reads a Claude Code session file. The conversation is the
// branch that ends at the file's last message, followed by parentUuid to
// its root; side chains (sub-agents) are left out. Lines of one API
// message (one message.id) become one assistant row; thinking is not
// carried, as its signature binds it to Anthropic's API.
func ReadClaude(r io.Reader) (Session, error) {
	var lines []*claudeLine
	byUUID := map[string]*claudeLine{}
	n := 0
	err := eachLine(r, func(b []byte) error {
		n++
		var l claudeLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("not a Claude Code session line: %v", err)
		}
		l.line = n
		if l.UUID != "" {
			byUUID[l.UUID] = &l
		}
		if (l.Type == "user" || l.Type == "assistant") && !l.IsSidechain {
			if l.Message == nil {
				return fmt.Errorf("a %s line without a message", l.Type)
			}
			lines = append(lines, &l)
		}
		return nil
	})
	if err != nil {
		return Session{}, err
	}
	if len(lines) == 0 {
		return Session{}, fmt.Errorf("the Claude Code file holds no user or assistant message")
	}
	// The active branch: from the last message back to the root.
	branch := lines
	if leaf := lines[len(lines)-1]; leaf.UUID != "" {
		branch = nil
		seen := map[string]bool{}
		for l := leaf; l != nil && !seen[l.UUID]; {
			seen[l.UUID] = true
			if (l.Type == "user" || l.Type == "assistant") && !l.IsSidechain && l.Message != nil {
				branch = append(branch, l)
			}
			if l.ParentUUID == nil {
				break
			}
			l = byUUID[*l.ParentUUID]
		}
		for i, j := 0, len(branch)-1; i < j; i, j = i+1, j-1 {
			branch[i], branch[j] = branch[j], branch[i]
		}
	}

	b := newBuilder()
	var cwd, id string
	for i := 0; i < len(branch); i++ {
		l := branch[i]
		if cwd == "" {
			cwd = l.Cwd
		}
		if id == "" {
			id = l.SessionID
		}
		at := parseTime(l.Timestamp)
		if l.Type == "assistant" {
			// Lines sharing a message id are one response.
			m := session.AssistantMessage{Model: l.Message.Model, Stop: model.StopEndTurn}
			for {
				if err := claudeAssistantParts(&m, branch[i]); err != nil {
					return Session{}, &LineError{Line: branch[i].line, Err: err}
				}
				if u := branch[i].Message.Usage; u != nil {
					m.Usage = model.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite}
				}
				if i+1 < len(branch) && branch[i+1].Type == "assistant" && l.Message.ID != "" && branch[i+1].Message.ID == l.Message.ID {
					i++
					continue
				}
				break
			}
			for _, p := range m.Parts {
				if _, ok := p.(model.ToolCall); ok {
					m.Stop = model.StopToolUse
				}
			}
			if len(m.Parts) > 0 {
				b.assistant(at, m)
			}
			continue
		}
		if l.IsMeta {
			continue
		}
		var s string
		if json.Unmarshal(l.Message.Content, &s) == nil {
			if strings.TrimSpace(s) != "" {
				b.user(at, s)
			}
			continue
		}
		var blocks []claudeBlock
		if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
			return Session{}, &LineError{Line: l.line, Err: fmt.Errorf("message.content is neither text nor blocks: %v", err)}
		}
		var words []string
		for _, bl := range blocks {
			switch bl.Type {
			case "tool_result":
				b.result(at, bl.ToolUseID, textOf(bl.Content), bl.IsError)
			case "text":
				words = append(words, bl.Text)
			}
		}
		if text := strings.TrimSpace(strings.Join(words, "\n")); text != "" {
			b.user(at, text)
		}
	}
	return b.session("Claude Code", id, cwd)
}

func claudeAssistantParts(m *session.AssistantMessage, l *claudeLine) error {
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		if s != "" {
			m.Parts = append(m.Parts, model.Text{Text: s})
		}
		return nil
	}
	var blocks []claudeBlock
	if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
		return fmt.Errorf("message.content is neither text nor blocks: %v", err)
	}
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if bl.Text != "" {
				m.Parts = append(m.Parts, model.Text{Text: bl.Text})
			}
		case "tool_use":
			if bl.ID == "" || bl.Name == "" {
				return fmt.Errorf("a tool_use block without its id or name")
			}
			m.Parts = append(m.Parts, model.ToolCall{ID: bl.ID, Name: bl.Name, Arguments: objectArgs(bl.Input)})
		}
	}
	return nil
}
