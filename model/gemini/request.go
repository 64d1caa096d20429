package gemini

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"meka.dev/meka/model"
)

// ErrBadRequest reports a model.Request that cannot be put on the wire,
// a tool schema Gemini cannot take among them.
var ErrBadRequest = errors.New("bad request")

// callPrefix marks the ids meka gives calls Gemini sent without one; a
// response to such a call goes back by name alone.
const callPrefix = "gemini_call_"

func (c *Client) body(req *model.Request) ([]byte, error) {
	var h head
	if req.System != "" {
		h.SystemInstruction = &content{Parts: []any{textPart{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		var decls []functionDecl
		for _, t := range req.Tools {
			params, err := Schema(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("build %s request: %w: tool %s: %w", Name, ErrBadRequest, t.Name, err)
			}
			decls = append(decls, functionDecl{Name: t.Name, Description: t.Description, Parameters: params})
		}
		h.Tools = []toolDecls{{FunctionDeclarations: decls}}
	}
	gc := genConfig{MaxOutputTokens: cmp.Or(req.MaxOutputTokens, c.opts.MaxOutputTokens)}
	if e := c.opts.ReasoningEffort; e != "" {
		tc := &thinkingConfig{IncludeThoughts: true}
		if n, err := strconv.Atoi(e); err == nil {
			tc.ThinkingBudget = n
		} else {
			tc.ThinkingLevel = strings.ToUpper(e)
		}
		gc.ThinkingConfig = tc
	}
	if gc != (genConfig{}) {
		h.GenerationConfig = &gc
	}
	out, err := encode(h)
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", Name, err)
	}
	if len(out) > 2 {
		out = append(out[:len(out)-1], ',')
	} else {
		out = out[:1]
	}
	out = append(out, `"contents":[`...)
	n := 0
	add := func(role string, parts [][]byte) {
		if len(parts) == 0 {
			return
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"role":"`+role+`","parts":[`...)
		out = append(out, join(parts)...)
		out = append(out, "]}"...)
		n++
	}
	for i, m := range req.Messages {
		role, parts, err := contents(m, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build %s request: message %d: %w", Name, i, err)
		}
		add(role, parts)
	}
	// The per-request context is a user turn of its own after the
	// conversation, so everything before it stays the same bytes.
	if len(req.Context) > 0 {
		_, parts, err := contents(model.Message{Role: model.RoleUser, Parts: req.Context}, req.Vision)
		if err != nil {
			return nil, fmt.Errorf("build %s request: context: %w", Name, err)
		}
		add("user", parts)
	}
	return append(out, "]}"...), nil
}

// join joins encoded parts with commas.
func join(parts [][]byte) []byte {
	var out []byte
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, p...)
	}
	return out
}

// contents translates one message into a role and its encoded parts.
func contents(m model.Message, vision bool) (string, [][]byte, error) {
	var parts [][]byte
	put := func(v any) {
		b, err := encode(v)
		if err == nil {
			parts = append(parts, b)
		}
	}
	switch m.Role {
	case model.RoleUser:
		for _, p := range m.Parts {
			switch p := p.(type) {
			case model.Text:
				put(textPart{Text: p.Text})
			case model.Resource:
				put(textPart{Text: p.PromptText()})
			case model.Image:
				put(image(p, vision))
			case model.Thinking:
			default:
				return "", nil, fmt.Errorf("%w: a user message cannot carry a %T", ErrBadRequest, p)
			}
		}
		if len(parts) == 0 {
			put(textPart{Text: ""})
		}
		return "user", parts, nil
	case model.RoleAssistant:
		// The turn as Gemini sent it, signatures and all, when kept.
		for _, p := range m.Parts {
			if th, ok := p.(model.Thinking); ok && th.Provider == Name {
				var raw []json.RawMessage
				if json.Unmarshal([]byte(th.Signature), &raw) == nil && len(raw) > 0 {
					for _, r := range raw {
						parts = append(parts, []byte(r))
					}
					return "model", parts, nil
				}
			}
		}
		for _, p := range m.Parts {
			switch p := p.(type) {
			case model.Text:
				put(textPart{Text: p.Text})
			case model.Resource:
				put(textPart{Text: p.PromptText()})
			case model.Image:
				put(textPart{Text: p.Placeholder()})
			case model.Thinking:
				// Only Gemini's own thought parts go back, and those went
				// above; another provider's never do.
			case model.ToolCall:
				fc := functionCall{Name: p.Name, Args: args(p.Arguments)}
				if !strings.HasPrefix(p.ID, callPrefix) {
					fc.ID = p.ID
				}
				put(functionCallPart{FunctionCall: fc})
			default:
				return "", nil, fmt.Errorf("%w: an assistant message cannot carry a %T", ErrBadRequest, p)
			}
		}
		return "model", parts, nil
	case model.RoleTool:
		var images []any
		for _, p := range m.Parts {
			r, ok := p.(model.ToolResult)
			if !ok {
				return "", nil, fmt.Errorf("%w: a tool message cannot carry a %T", ErrBadRequest, p)
			}
			var texts []string
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
					texts = append(texts, "[image attached after the results]")
					images = append(images, textPart{Text: fmt.Sprintf("Image from the result of tool call %s (%s):", r.CallID, r.Name)}, image(c, true))
				}
			}
			key := "output"
			if r.IsError {
				key = "error"
			}
			fr := functionResponse{Name: r.Name, Response: map[string]any{key: strings.Join(texts, "\n")}}
			if !strings.HasPrefix(r.CallID, callPrefix) {
				fr.ID = r.CallID
			}
			put(functionResponsePart{FunctionResponse: fr})
		}
		for _, im := range images {
			put(im)
		}
		return "user", parts, nil
	}
	return "", nil, fmt.Errorf("%w: unknown role %q", ErrBadRequest, m.Role)
}

// args are a call's arguments as Gemini takes them: an object.
func args(a json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(a, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return a
}

func image(img model.Image, vision bool) any {
	if !vision {
		return textPart{Text: img.Placeholder()}
	}
	return inlineDataPart{InlineData: blob{MimeType: img.MediaType, Data: base64.StdEncoding.EncodeToString(img.Data)}}
}
