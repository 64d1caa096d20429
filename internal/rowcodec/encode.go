package rowcodec

import (
	"encoding/json"
	"reflect"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// Encode is session.EncodeEntry in fewer passes. model.Parts marshals
// each part, then the list, and json.Marshal compacts what a MarshalJSON
// returns, so a message's text is copied and rescanned three times over.
// Here each part is wrapped with its "type" beside the embedded model value
// and the whole entry is marshalled in one pass.
//
// It is safe by construction against the types changing: embedding the
// model and session structs carries any field they gain; a part variant
// this switch does not know, or any part type that gains its own
// MarshalJSON (which embedding would promote, losing "type"), sends the
// entry to session.EncodeEntry. The JSON is the one EncodeEntry writes, but
// for the order of a tool result's fields.
func Encode(e session.Entry) (kind string, payload []byte, err error) {
	if !partsMarshalPlainly {
		return session.EncodeEntry(e)
	}
	var v any
	switch e := e.(type) {
	case session.UserMessage:
		parts, ok := wrapParts(e.Parts)
		if !ok {
			return session.EncodeEntry(e)
		}
		v = userOut{parts, e}
	case session.AssistantMessage:
		parts, ok := wrapParts(e.Parts)
		if !ok {
			return session.EncodeEntry(e)
		}
		v = assistantOut{parts, e}
	case session.ToolResult:
		content, ok := wrapParts(e.Content)
		if !ok {
			return session.EncodeEntry(e)
		}
		v = toolResultOut{content, e}
	default:
		return session.EncodeEntry(e)
	}
	payload, err = json.Marshal(v)
	if err != nil {
		// The same error, worded as EncodeEntry words it.
		return session.EncodeEntry(e)
	}
	return e.Kind(), payload, nil
}

// The entry wrappers put their parts field first, where it hides the
// embedded one (a shallower field wins in encoding/json).
type userOut struct {
	Parts []any `json:"parts"`
	session.UserMessage
}

type assistantOut struct {
	Parts []any `json:"parts"`
	session.AssistantMessage
}

type toolResultOut struct {
	Content []any `json:"content"`
	session.ToolResult
}

// Part wrappers: "type" first, then the embedded part's fields, as
// model.MarshalPart writes them.
type (
	textOut struct {
		Type string `json:"type"`
		model.Text
	}
	imageOut struct {
		Type string `json:"type"`
		model.Image
	}
	resourceOut struct {
		Type string `json:"type"`
		model.Resource
	}
	thinkingOut struct {
		Type string `json:"type"`
		model.Thinking
	}
	toolCallOut struct {
		Type string `json:"type"`
		model.ToolCall
	}
	toolResultPartOut struct {
		Type string `json:"type"`
		model.ToolResult
	}
)

// wrapParts wraps each part with its type; ok is false for a variant it
// does not know. The list is never nil, so that a nil model.Parts is
// written as [] as its MarshalJSON writes it, not as null.
func wrapParts(ps model.Parts) ([]any, bool) {
	out := make([]any, len(ps))
	for i, p := range ps {
		switch p := p.(type) {
		case model.Text:
			out[i] = textOut{"text", p}
		case model.Image:
			out[i] = imageOut{"image", p}
		case model.Resource:
			out[i] = resourceOut{"resource", p}
		case model.Thinking:
			out[i] = thinkingOut{"thinking", p}
		case model.ToolCall:
			out[i] = toolCallOut{"tool_call", p}
		case model.ToolResult:
			out[i] = toolResultPartOut{"tool_result", p}
		default:
			return nil, false
		}
	}
	return out, true
}

// partsMarshalPlainly is false if any part variant has a MarshalJSON of
// its own, which the wrappers would promote in place of their fields.
var partsMarshalPlainly = func() bool {
	marshaler := reflect.TypeFor[json.Marshaler]()
	for _, p := range []model.Part{model.Text{}, model.Image{}, model.Resource{}, model.Thinking{}, model.ToolCall{}, model.ToolResult{}} {
		t := reflect.TypeOf(p)
		if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
			return false
		}
	}
	return true
}()
