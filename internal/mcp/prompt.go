package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompt is a server's prompt, offered as the slash command /Name.
type Prompt struct {
	// Name is meka's: mcp__<server>__<prompt>.
	Name        string
	Server      string
	Remote      string
	Description string
	// Arguments are the prompt's argument names, required ones first.
	Arguments []string
}

func newPrompt(s *server, p *sdk.Prompt) Prompt {
	out := Prompt{Name: PromptName(s.cfg.Name, p.Name), Server: s.cfg.Name, Remote: p.Name, Description: p.Description}
	var optional []string
	for _, a := range p.Arguments {
		if a.Required {
			out.Arguments = append(out.Arguments, a.Name)
		} else {
			optional = append(optional, a.Name)
		}
	}
	out.Arguments = append(out.Arguments, optional...)
	return out
}

// Prompts returns the prompts of every connected server.
func (m *Manager) Prompts() []Prompt {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prompts
}

// ErrNoPrompt is returned by GetPrompt for a name no server offers.
var ErrNoPrompt = errors.New("no such MCP prompt")

// GetPrompt renders the prompt called name (meka's name) with input, the
// words typed after the command: they fill the prompt's first argument.
// The result is the text of its messages, in order.
func (m *Manager) GetPrompt(ctx context.Context, name, input string) (string, error) {
	var p *Prompt
	for _, q := range m.Prompts() {
		if q.Name == name {
			p = &q
			break
		}
	}
	if p == nil {
		return "", fmt.Errorf("get prompt %s: %w", name, ErrNoPrompt)
	}
	s := m.byName[p.Server]
	cs := s.session()
	if cs == nil {
		return "", fmt.Errorf("get prompt %s: the MCP server %s is not connected", name, p.Server)
	}
	args := map[string]string{}
	if input = strings.TrimSpace(input); input != "" && len(p.Arguments) > 0 {
		args[p.Arguments[0]] = input
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ToolTimeout)
	defer cancel()
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: p.Remote, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("get prompt %s: %w", name, err)
	}
	var b strings.Builder
	for _, msg := range res.Messages {
		if t, ok := msg.Content.(*sdk.TextContent); ok {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(t.Text)
		}
	}
	return b.String(), nil
}
