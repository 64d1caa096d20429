package model

import (
	"encoding/json"
	"fmt"
)

// Part is one piece of a message. The variants are Text, Image, Resource,
// Thinking, ToolCall and ToolResult; each marshals with an explicit "type".
type Part interface{ partType() string }

// Text is plain text.
type Text struct {
	Text string `json:"text"`
}

// Image is an image given to the model natively.
type Image struct {
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	// Name is where the image came from, for transcripts.
	Name string `json:"name,omitempty"`
}

// Resource is a file or link the user attached, kept in place in the
// message. Text is its content when it was embedded, empty for a link;
// Blob marks embedded binary contents, whose payload is not kept.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	MimeType    string `json:"mime_type,omitempty"`
	Text        string `json:"text,omitempty"`
	Description string `json:"description,omitempty"`
	Blob        bool   `json:"blob,omitempty"`
}

// Thinking is the model's reasoning. Provider names the wire format that
// produced it: thinking is only ever replayed to the provider it came from,
// which may need Signature (or Redacted data) to accept it back.
type Thinking struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
	Provider  string `json:"provider"`
}

// ToolCall is the model asking to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult answers a ToolCall.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content Parts  `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

func (Text) partType() string       { return "text" }
func (Image) partType() string      { return "image" }
func (Resource) partType() string   { return "resource" }
func (Thinking) partType() string   { return "thinking" }
func (ToolCall) partType() string   { return "tool_call" }
func (ToolResult) partType() string { return "tool_result" }

// Parts is a list of parts that round-trips through JSON with each part's
// type recorded.
type Parts []Part

func (ps Parts) MarshalJSON() ([]byte, error) {
	out := make([]json.RawMessage, 0, len(ps))
	for _, p := range ps {
		b, err := MarshalPart(p)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return json.Marshal(out)
}

func (ps *Parts) UnmarshalJSON(b []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	parts := make(Parts, 0, len(raws))
	for _, r := range raws {
		p, err := UnmarshalPart(r)
		if err != nil {
			return err
		}
		parts = append(parts, p)
	}
	*ps = parts
	return nil
}

// MarshalPart encodes p with its "type".
func MarshalPart(p Part) ([]byte, error) {
	body, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	typ, _ := json.Marshal(p.partType())
	if string(body) == "{}" {
		return []byte(`{"type":` + string(typ) + `}`), nil
	}
	return append([]byte(`{"type":`+string(typ)+`,`), body[1:]...), nil
}

// UnmarshalPart decodes a part written by MarshalPart.
func UnmarshalPart(b []byte) (Part, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode part: %w", err)
	}
	var p Part
	var err error
	switch head.Type {
	case "text":
		var v Text
		err = json.Unmarshal(b, &v)
		p = v
	case "image":
		var v Image
		err = json.Unmarshal(b, &v)
		p = v
	case "resource":
		var v Resource
		err = json.Unmarshal(b, &v)
		p = v
	case "thinking":
		var v Thinking
		err = json.Unmarshal(b, &v)
		p = v
	case "tool_call":
		var v ToolCall
		err = json.Unmarshal(b, &v)
		p = v
	case "tool_result":
		var v ToolResult
		err = json.Unmarshal(b, &v)
		p = v
	default:
		return nil, fmt.Errorf("decode part: unknown type %q", head.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s part: %w", head.Type, err)
	}
	return p, nil
}
