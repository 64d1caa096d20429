package openai

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// ErrBadRequest reports a model.Request that cannot be put on the wire,
// such as a tool result outside a tool message.
var ErrBadRequest = errors.New("bad request")

// params translates req to the wire.
func (c *Client) params(req *model.Request) (*chatRequest, error) {
	p := &chatRequest{Model: c.opts.Model, ReasoningEffort: c.opts.ReasoningEffort}
	if sys := joinSystem(req.System, req.SystemContext); sys != "" {
		p.Messages = append(p.Messages, message{Content: sys, Role: "system"})
	}
	for i, m := range req.Messages {
		msgs, err := messages(m, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build openai request: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msgs...)
	}
	// The per-request context is a user message of its own after the
	// conversation, so everything before it is the same bytes as the
	// previous request's and the server's prefix cache holds.
	if len(req.Context) > 0 {
		u, err := userMessage(req.Context, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build openai request: context: %w", err)
		}
		p.Messages = append(p.Messages, u)
	}
	// The reminder is the final message, in the system role: the model
	// reads it last and never as the user's words.
	if req.Reminder != "" {
		p.Messages = append(p.Messages, message{Content: req.Reminder, Role: "system"})
	}
	if req.CacheKey != "" && c.cacheKey {
		p.PromptCacheKey = req.CacheKey
	}
	for _, t := range req.Tools {
		fn := toolFunction{Name: t.Name, Description: t.Description, Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}
		if sorted, ok := model.SortedSchema(t.Parameters); ok {
			fn.Parameters = sorted
		} else if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("build openai request: tool %s: decode parameters: %w", t.Name, err)
			}
			fn.Parameters = nil // a JSON null schema is omitted
			if schema != nil {
				fn.Parameters = schema
			}
		}
		p.Tools = append(p.Tools, tool{Function: fn, Type: "function"})
	}
	if n := cmp.Or(req.MaxOutputTokens, c.opts.MaxOutputTokens); n > 0 {
		if c.maxCompletionTokens {
			p.MaxCompletionTokens = n
		} else {
			p.MaxTokens = n
		}
	}
	return p, nil
}

// messages translates one message; a tool message becomes one "tool"
// message per result, and a user message carrying their images when the
// model sees images, since a tool message holds only text.
func messages(m model.Message, vision bool) ([]message, error) {
	switch m.Role {
	case model.RoleUser:
		u, err := userMessage(m.Parts, vision)
		if err != nil {
			return nil, err
		}
		return []message{u}, nil
	case model.RoleAssistant:
		a, err := assistantMessage(m.Parts)
		if err != nil {
			return nil, err
		}
		return []message{a}, nil
	case model.RoleTool:
		return toolMessages(m.Parts, vision)
	}
	return nil, fmt.Errorf("%w: unknown role %q", ErrBadRequest, m.Role)
}

func userMessage(parts model.Parts, vision bool) (message, error) {
	var content []any
	var texts []string
	images := false
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			texts = append(texts, p.Text)
			content = append(content, textPart{Text: p.Text, Type: "text"})
		case model.Resource:
			texts = append(texts, p.PromptText())
			content = append(content, textPart{Text: p.PromptText(), Type: "text"})
		case model.Image:
			if !vision {
				texts = append(texts, p.Placeholder())
				content = append(content, textPart{Text: p.Placeholder(), Type: "text"})
				continue
			}
			images = true
			content = append(content, imageContent(p))
		case model.Thinking:
			// Never sent: only the provider that made it may read it.
		default:
			return message{}, fmt.Errorf("%w: a user message cannot carry a %T", ErrBadRequest, p)
		}
	}
	if images {
		return message{Content: content, Role: "user"}, nil
	}
	// Plain string content is what every compatible server understands.
	return message{Content: strings.Join(texts, "\n"), Role: "user"}, nil
}

func imageContent(img model.Image) imagePart {
	url := "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
	return imagePart{ImageURL: imageURL{URL: url}, Type: "image_url"}
}

func assistantMessage(parts model.Parts) (message, error) {
	a := message{Role: "assistant"}
	var texts []string
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			texts = append(texts, p.Text)
		case model.Resource:
			texts = append(texts, p.PromptText())
		case model.Image:
			texts = append(texts, p.Placeholder())
		case model.Thinking:
			// Dropped: OpenAI takes no reasoning back, and thinking from
			// another provider must never reach this one.
		case model.ToolCall:
			a.ToolCalls = append(a.ToolCalls, toolCall{
				ID:       p.ID,
				Function: callFunction{Name: p.Name, Arguments: string(model.ToolArguments(string(p.Arguments)))},
				Type:     "function",
			})
		default:
			return message{}, fmt.Errorf("%w: an assistant message cannot carry a %T", ErrBadRequest, p)
		}
	}
	if len(texts) > 0 || len(a.ToolCalls) == 0 {
		a.Content = strings.Join(texts, "\n")
	}
	return a, nil
}

func toolMessages(parts model.Parts, vision bool) ([]message, error) {
	var out []message
	var images []any
	for _, p := range parts {
		r, ok := p.(model.ToolResult)
		if !ok {
			return nil, fmt.Errorf("%w: a tool message cannot carry a %T", ErrBadRequest, p)
		}
		var texts []string
		if r.IsError {
			texts = append(texts, "Error:")
		}
		for _, c := range r.Content {
			switch c := c.(type) {
			case model.Text:
				texts = append(texts, c.Text)
			case model.Resource:
				texts = append(texts, c.PromptText())
			case model.Image:
				if !vision {
					texts = append(texts, c.Placeholder())
					continue
				}
				texts = append(texts, "[image attached in the next message]")
				images = append(images,
					textPart{Text: fmt.Sprintf("Image from the result of tool call %s (%s):", r.CallID, r.Name), Type: "text"},
					imageContent(c))
			default:
				return nil, fmt.Errorf("%w: a tool result cannot carry a %T", ErrBadRequest, c)
			}
		}
		out = append(out, message{Content: strings.Join(texts, "\n"), ToolCallID: &r.CallID, Role: "tool"})
	}
	if len(images) > 0 {
		out = append(out, message{Content: images, Role: "user"})
	}
	return out, nil
}

// joinSystem is the system prompt with the request's own system text
// after it, in one message: some compatible servers take a single system
// message only.
func joinSystem(system, extra string) string {
	switch {
	case extra == "":
		return system
	case system == "":
		return extra
	}
	return system + "\n\n" + extra
}
