package responses

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// ErrBadRequest reports a model.Request that cannot be put on the wire.
var ErrBadRequest = errors.New("bad request")

// include asks for reasoning items' encrypted content, without which a
// stateless (store false) conversation loses the model's reasoning.
var include = []string{"reasoning.encrypted_content"}

// body translates req to the bytes sent.
func (c *Client) body(req *model.Request) ([]byte, error) {
	h := head{Model: c.opts.Model, Instructions: req.System, Include: include, PromptCacheKey: req.CacheKey, Stream: true}
	if c.opts.ReasoningEffort != "" {
		h.Reasoning = &reasoning{Effort: c.opts.ReasoningEffort, Summary: "auto"}
	}
	h.MaxOutputTokens = cmp.Or(req.MaxOutputTokens, c.opts.MaxOutputTokens)
	for _, t := range req.Tools {
		tl := tool{Type: "function", Name: t.Name, Description: t.Description}
		if sorted, ok := model.SortedSchema(t.Parameters); ok && string(sorted) != "{}" {
			tl.Parameters = sorted
			h.Tools = append(h.Tools, tl)
			continue
		}
		var schema map[string]any
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("build %s request: tool %s: decode parameters: %w", Name, t.Name, err)
			}
		}
		if len(schema) == 0 {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		tl.Parameters = schema
		h.Tools = append(h.Tools, tl)
	}
	out, err := encode(h)
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", Name, err)
	}
	out = append(out[:len(out)-1], `,"input":[`...)
	n := 0
	add := func(b []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
		n++
	}
	for i, m := range req.Messages {
		if err := items(m, req.Vision, add); err != nil {
			return nil, fmt.Errorf("build %s request: message %d: %w", Name, i, err)
		}
	}
	// The per-request context is a user message of its own after the
	// conversation, so everything before it stays the same bytes.
	if len(req.Context) > 0 {
		if err := items(model.Message{Role: model.RoleUser, Parts: req.Context}, req.Vision, add); err != nil {
			return nil, fmt.Errorf("build %s request: context: %w", Name, err)
		}
	}
	return append(out, "]}"...), nil
}

// items translates one message into input items, passing each to add.
func items(m model.Message, vision bool, add func([]byte)) error {
	put := func(v any) error {
		b, err := encode(v)
		if err != nil {
			return err
		}
		add(b)
		return nil
	}
	switch m.Role {
	case model.RoleUser:
		var content []any
		for _, p := range m.Parts {
			switch p := p.(type) {
			case model.Text:
				content = append(content, inputText{Type: "input_text", Text: p.Text})
			case model.Resource:
				content = append(content, inputText{Type: "input_text", Text: p.PromptText()})
			case model.Image:
				content = append(content, image(p, vision))
			case model.Thinking:
			default:
				return fmt.Errorf("%w: a user message cannot carry a %T", ErrBadRequest, p)
			}
		}
		if len(content) == 0 {
			content = append(content, inputText{Type: "input_text", Text: ""})
		}
		return put(message{Type: "message", Role: "user", Content: content})
	case model.RoleAssistant:
		var text []any
		flush := func() error {
			if len(text) == 0 {
				return nil
			}
			err := put(message{Type: "message", Role: "assistant", Content: text})
			text = nil
			return err
		}
		for _, p := range m.Parts {
			var err error
			switch p := p.(type) {
			case model.Text:
				text = append(text, inputText{Type: "output_text", Text: p.Text})
			case model.Resource:
				text = append(text, inputText{Type: "output_text", Text: p.PromptText()})
			case model.Image:
				text = append(text, inputText{Type: "output_text", Text: p.Placeholder()})
			case model.Thinking:
				// A reasoning item goes back as it came; thinking of
				// another provider, or without its item, never does.
				if p.Provider == Name && json.Valid([]byte(p.Signature)) {
					if err = flush(); err == nil {
						add(replayed([]byte(p.Signature)))
					}
				}
			case model.ToolCall:
				if err = flush(); err == nil {
					err = put(functionCall{Type: "function_call", CallID: p.ID, Name: p.Name, Arguments: string(model.ToolArguments(string(p.Arguments)))})
				}
			default:
				err = fmt.Errorf("%w: an assistant message cannot carry a %T", ErrBadRequest, p)
			}
			if err != nil {
				return err
			}
		}
		return flush()
	case model.RoleTool:
		for _, p := range m.Parts {
			r, ok := p.(model.ToolResult)
			if !ok {
				return fmt.Errorf("%w: a tool message cannot carry a %T", ErrBadRequest, p)
			}
			if err := put(functionCallOutput{Type: "function_call_output", CallID: r.CallID, Output: output(r, vision)}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%w: unknown role %q", ErrBadRequest, m.Role)
}

// output is a tool result as function_call_output carries it: text, or
// text and images when it holds an image the model may see.
func output(r model.ToolResult, vision bool) any {
	var texts []string
	var parts []any
	images := false
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
			images = true
			if len(texts) > 0 {
				parts = append(parts, inputText{Type: "input_text", Text: strings.Join(texts, "\n")})
				texts = nil
			}
			parts = append(parts, image(c, true))
		}
	}
	if !images {
		return strings.Join(texts, "\n")
	}
	if len(texts) > 0 {
		parts = append(parts, inputText{Type: "input_text", Text: strings.Join(texts, "\n")})
	}
	return parts
}

func image(img model.Image, vision bool) any {
	if !vision {
		return inputText{Type: "input_text", Text: img.Placeholder()}
	}
	return inputImage{Type: "input_image", ImageURL: "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)}
}

// replayed is a kept item as it goes back: its bytes as they came, less
// its top-level "id" and "status". Under store false the API keeps no
// item, and an id it is sent back fails the request ("Item with id … not
// found. Items are not persisted when store is set to false"), as Codex
// found; every other member, encrypted_content first of all, is the bytes
// received. Bytes that are not one JSON object go as they are.
func replayed(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return raw
	}
	out := []byte{'{'}
	dropped := false
	for dec.More() {
		start := dec.InputOffset()
		key, err := dec.Token()
		if err != nil {
			return raw
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw
		}
		end := dec.InputOffset()
		if key == "id" || key == "status" {
			dropped = true
			continue
		}
		member := bytes.TrimLeft(raw[start:end], " \t\r\n,")
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, member...)
	}
	if !dropped {
		return raw
	}
	return append(out, '}')
}
