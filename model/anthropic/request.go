package anthropic

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"meka.dev/meka/model"
)

// ErrBadRequest reports a model.Request that cannot be put on the wire,
// such as a tool result outside a tool message.
var ErrBadRequest = errors.New("bad request")

const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// body translates req to the wire.
func (c *Client) body(req *model.Request) (*wireRequest, error) {
	p := &wireRequest{Model: c.opts.Model}
	maxTokens := cmp.Or(req.MaxOutputTokens, c.opts.MaxOutputTokens, DefaultMaxOutputTokens)
	if b := c.opts.ThinkingBudget; b > 0 {
		p.Thinking = &wireThinking{BudgetTokens: b, Type: "enabled"}
		// The budget counts against max_tokens and must stay below it.
		maxTokens = max(maxTokens, b+DefaultMaxOutputTokens)
	}
	p.MaxTokens = maxTokens
	if req.System != "" {
		p.System = []*textBlock{newText(req.System)}
	}
	for i, m := range req.Messages {
		role, blocks, err := message(m, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build anthropic request: message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue // say, an assistant message that only held another provider's thinking
		}
		// Tool results and the user's next words are one user turn.
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			continue
		}
		p.Messages = append(p.Messages, wireMessage{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return nil, fmt.Errorf("build anthropic request: %w", err)
		}
		p.Tools = append(p.Tools, tool)
	}
	markCache(p)
	// The request's own system text is a system block after the cached
	// one: the tools and the system prompt stay a cached prefix.
	if req.SystemContext != "" {
		p.System = append(p.System, newText(req.SystemContext))
	}
	// The per-request context follows the last breakpoint, so the marked
	// prefix is what the next request repeats byte for byte.
	if len(req.Context) > 0 {
		blocks, err := userBlocks(req.Context, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build anthropic request: context: %w", err)
		}
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == roleUser {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
		} else if len(blocks) > 0 {
			p.Messages = append(p.Messages, wireMessage{Role: roleUser, Content: blocks})
		}
	}
	// The Messages API has no system role after the conversation, so the
	// reminder ends the final turn marked as a system reminder, which is
	// how Claude is taught to tell injected context from the user's
	// words, and stays after the cached prefix.
	if req.Reminder != "" {
		b := newText("<system-reminder>\n" + req.Reminder + "\n</system-reminder>")
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == roleUser {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, b)
		} else {
			p.Messages = append(p.Messages, wireMessage{Role: roleUser, Content: []any{b}})
		}
	}
	return p, nil
}

// markCache sets prompt-cache breakpoints where an agent's requests stop
// sharing a prefix: after the system prompt (which follows the tools) and
// after the last persisted message, so the next request reads this one's
// prefix. It runs before the per-request context is added.
func markCache(p *wireRequest) {
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = ephemeral
	case len(p.Tools) > 0:
		p.Tools[len(p.Tools)-1].CacheControl = ephemeral
	}
	if len(p.Messages) == 0 {
		return
	}
	blocks := p.Messages[len(p.Messages)-1].Content
	for i := len(blocks) - 1; i >= 0; i-- {
		// Thinking blocks cannot carry a breakpoint.
		switch b := blocks[i].(type) {
		case *textBlock:
			b.CacheControl = ephemeral
		case *imageBlock:
			b.CacheControl = ephemeral
		case *toolUseBlock:
			b.CacheControl = ephemeral
		case *toolResultBlock:
			b.CacheControl = ephemeral
		default:
			continue
		}
		return
	}
}

// toolParam puts a tool on the wire. Its schema's type is always
// "object", as the API requires of input_schema.
func toolParam(t model.ToolSpec) (*wireTool, error) {
	tool := &wireTool{Name: t.Name, Description: t.Description}
	schema := map[string]any{}
	if len(t.Parameters) > 0 {
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return nil, fmt.Errorf("tool %s: decode parameters: %w", t.Name, err)
		}
	}
	tool.InputSchema.Properties = schema["properties"]
	if tool.InputSchema.Properties == nil {
		tool.InputSchema.Properties = map[string]any{}
	}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				tool.InputSchema.Required = append(tool.InputSchema.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			if tool.InputSchema.Extra == nil {
				tool.InputSchema.Extra = map[string]any{}
			}
			tool.InputSchema.Extra[k] = v
		}
	}
	return tool, nil
}

func message(m model.Message, vision bool) (string, []any, error) {
	switch m.Role {
	case model.RoleUser:
		b, err := userBlocks(m.Parts, vision)
		return roleUser, b, err
	case model.RoleAssistant:
		b, err := assistantBlocks(m.Parts)
		return roleAssistant, b, err
	case model.RoleTool:
		b, err := resultBlocks(m.Parts, vision)
		return roleUser, b, err
	}
	return "", nil, fmt.Errorf("%w: unknown role %q", ErrBadRequest, m.Role)
}

func newText(s string) *textBlock { return &textBlock{Text: s, Type: "text"} }

// text is a text block, or none for empty text, which the API refuses.
func text(s string) []any {
	if s == "" {
		return nil
	}
	return []any{newText(s)}
}

func image(img model.Image, vision bool) any {
	if !vision {
		return newText(img.Placeholder())
	}
	return &imageBlock{Type: "image", Source: imageSource{
		Data:      base64.StdEncoding.EncodeToString(img.Data),
		MediaType: img.MediaType,
		Type:      "base64",
	}}
}

func userBlocks(parts model.Parts, vision bool) ([]any, error) {
	var out []any
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			out = append(out, text(p.Text)...)
		case model.Resource:
			out = append(out, text(p.PromptText())...)
		case model.Image:
			out = append(out, image(p, vision))
		case model.Thinking:
			// Never sent from a user message.
		default:
			return nil, fmt.Errorf("%w: a user message cannot carry a %T", ErrBadRequest, p)
		}
	}
	return out, nil
}

func assistantBlocks(parts model.Parts) ([]any, error) {
	var out []any
	for _, p := range parts {
		switch p := p.(type) {
		case model.Thinking:
			// Only Anthropic's own thinking goes back, and only as it was
			// signed: the API checks the signature.
			switch {
			case p.Provider != Name:
			case p.Redacted != "":
				out = append(out, &redactedThinkingBlock{Data: p.Redacted, Type: "redacted_thinking"})
			case p.Signature != "":
				out = append(out, &thinkingBlock{Signature: p.Signature, Thinking: p.Text, Type: "thinking"})
			}
		case model.Text:
			out = append(out, text(p.Text)...)
		case model.Resource:
			out = append(out, text(p.PromptText())...)
		case model.Image:
			out = append(out, text(p.Placeholder())...)
		case model.ToolCall:
			out = append(out, &toolUseBlock{ID: p.ID, Input: toolInput(p.Arguments), Name: p.Name, Type: "tool_use"})
		default:
			return nil, fmt.Errorf("%w: an assistant message cannot carry a %T", ErrBadRequest, p)
		}
	}
	return out, nil
}

// toolInput is a call's arguments as the object the API requires; the
// arguments of a malformed call (kept as a JSON string) become {}.
func toolInput(args json.RawMessage) json.RawMessage {
	a := model.ToolArguments(string(args))
	if t := bytes.TrimSpace(a); len(t) == 0 || t[0] != '{' {
		return json.RawMessage("{}")
	}
	return a
}

func resultBlocks(parts model.Parts, vision bool) ([]any, error) {
	var out []any
	for _, p := range parts {
		r, ok := p.(model.ToolResult)
		if !ok {
			return nil, fmt.Errorf("%w: a tool message cannot carry a %T", ErrBadRequest, p)
		}
		block := &toolResultBlock{ToolUseID: r.CallID, IsError: r.IsError, Type: "tool_result"}
		for _, c := range r.Content {
			switch c := c.(type) {
			case model.Text:
				if c.Text == "" {
					continue
				}
				block.Content = append(block.Content, newText(c.Text))
			case model.Resource:
				block.Content = append(block.Content, newText(c.PromptText()))
			case model.Image:
				block.Content = append(block.Content, image(c, vision))
			default:
				return nil, fmt.Errorf("%w: a tool result cannot carry a %T", ErrBadRequest, c)
			}
		}
		out = append(out, block)
	}
	return out, nil
}
