package openai

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"meka.dev/meka/model"
)

// ErrBadRequest reports a model.Request that cannot be put on the wire,
// such as a tool result outside a tool message.
var ErrBadRequest = errors.New("bad request")

// params translates req to the wire.
func (c *Client) params(req *model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.opts.Model)}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m, req.Vision)
		if err != nil {
			return p, fmt.Errorf("build openai request: message %d: %w", i, err)
		}
		p.Messages = append(p.Messages, msgs...)
	}
	// The per-request context is a user message of its own after the
	// conversation, so everything before it is the same bytes as the
	// previous request's and the server's prefix cache holds.
	if len(req.Context) > 0 {
		u, err := userMessage(req.Context, req.Vision)
		if err != nil {
			return p, fmt.Errorf("build openai request: context: %w", err)
		}
		p.Messages = append(p.Messages, u)
	}
	if req.CacheKey != "" && c.cacheKey {
		p.PromptCacheKey = openai.String(req.CacheKey)
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}}}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return p, fmt.Errorf("build openai request: tool %s: decode parameters: %w", t.Name, err)
			}
			fn.Parameters = schema
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if n := cmp.Or(req.MaxOutputTokens, c.opts.MaxOutputTokens); n > 0 {
		if c.maxCompletionTokens {
			p.MaxCompletionTokens = openai.Int(int64(n))
		} else {
			p.MaxTokens = openai.Int(int64(n))
		}
	}
	return p, nil
}

// messages translates one message; a tool message becomes one "tool"
// message per result, and a user message carrying their images when the
// model sees images, since a tool message holds only text.
func messages(m model.Message, vision bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case model.RoleUser:
		u, err := userMessage(m.Parts, vision)
		if err != nil {
			return nil, err
		}
		return []openai.ChatCompletionMessageParamUnion{u}, nil
	case model.RoleAssistant:
		a, err := assistantMessage(m.Parts)
		if err != nil {
			return nil, err
		}
		return []openai.ChatCompletionMessageParamUnion{a}, nil
	case model.RoleTool:
		return toolMessages(m.Parts, vision)
	}
	return nil, fmt.Errorf("%w: unknown role %q", ErrBadRequest, m.Role)
}

func userMessage(parts model.Parts, vision bool) (openai.ChatCompletionMessageParamUnion, error) {
	var content []openai.ChatCompletionContentPartUnionParam
	var texts []string
	images := false
	for _, p := range parts {
		switch p := p.(type) {
		case model.Text:
			texts = append(texts, p.Text)
			content = append(content, openai.TextContentPart(p.Text))
		case model.Resource:
			texts = append(texts, p.PromptText())
			content = append(content, openai.TextContentPart(p.PromptText()))
		case model.Image:
			if !vision {
				texts = append(texts, p.Placeholder())
				content = append(content, openai.TextContentPart(p.Placeholder()))
				continue
			}
			images = true
			content = append(content, imagePart(p))
		case model.Thinking:
			// Never sent: only the provider that made it may read it.
		default:
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("%w: a user message cannot carry a %T", ErrBadRequest, p)
		}
	}
	if images {
		return openai.UserMessage(content), nil
	}
	// Plain string content is what every compatible server understands.
	return openai.UserMessage(strings.Join(texts, "\n")), nil
}

func imagePart(img model.Image) openai.ChatCompletionContentPartUnionParam {
	url := "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url})
}

func assistantMessage(parts model.Parts) (openai.ChatCompletionMessageParamUnion, error) {
	var a openai.ChatCompletionAssistantMessageParam
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
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: p.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      p.Name,
						Arguments: string(model.ToolArguments(string(p.Arguments))),
					},
				},
			})
		default:
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("%w: an assistant message cannot carry a %T", ErrBadRequest, p)
		}
	}
	if len(texts) > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = openai.String(strings.Join(texts, "\n"))
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
}

func toolMessages(parts model.Parts, vision bool) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	var images []openai.ChatCompletionContentPartUnionParam
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
					openai.TextContentPart(fmt.Sprintf("Image from the result of tool call %s (%s):", r.CallID, r.Name)),
					imagePart(c))
			default:
				return nil, fmt.Errorf("%w: a tool result cannot carry a %T", ErrBadRequest, c)
			}
		}
		out = append(out, openai.ToolMessage(strings.Join(texts, "\n"), r.CallID))
	}
	if len(images) > 0 {
		out = append(out, openai.UserMessage(images))
	}
	return out, nil
}
