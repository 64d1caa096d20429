package rowcodec

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// Reading a session is mostly JSON decoding, and session.DecodeEntry reads
// a message's bytes six or seven times: json.Unmarshal validates before it
// decodes, model.Parts decodes into raw messages first, and each part is
// decoded twice (once for its "type"). Decode reads the three kinds
// that carry parts in one pass of the json/v2 decoder (the prototype of
// encoding/json/v2, which validates while it decodes and unescapes strings
// about twice as fast: opening a 2,000-row session halves) into mirror structs
// with every part variant's fields side by side, then builds the model
// values. Anything the mirror does not know (an unknown field, part type or
// kind, or any error) goes to session.DecodeEntry, so the result is what
// it would have returned, but for one case EncodeEntry never writes: a
// list of parts given as JSON null decodes as nil rather than empty.
func Decode(kind string, payload []byte) (session.Entry, error) {
	if e, ok := fastDecode(kind, payload); ok {
		return e, nil
	}
	return session.DecodeEntry(kind, payload)
}

// wirePart has the JSON fields of every model.Part variant; json names
// shared by several variants have the same type in each.
type wirePart struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	MediaType string          `json:"media_type"`
	Data      []byte          `json:"data"`
	Name      string          `json:"name"`
	URI       string          `json:"uri"`
	MimeType  string          `json:"mime_type"`
	Signature string          `json:"signature"`
	Redacted  string          `json:"redacted"`
	Provider  string          `json:"provider"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	Content   []wirePart      `json:"content"`
	IsError   bool            `json:"is_error"`
	// Resource's own fields.
	Description string `json:"description"`
	Blob        bool   `json:"blob"`
}

type wireUser struct {
	Parts     []wirePart `json:"parts"`
	Source    string     `json:"source"`
	Tasks     []string   `json:"tasks"`
	Command   string     `json:"command"`
	Expansion []wirePart `json:"expansion"`
	Reopen    []string   `json:"reopen"`
	Pinned    bool       `json:"pinned"`
}

type wireAssistant struct {
	Parts []wirePart       `json:"parts"`
	Usage model.Usage      `json:"usage"`
	Stop  model.StopReason `json:"stop"`
	Model string           `json:"model"`
}

type wireToolResult struct {
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Status  string          `json:"status"`
	Content []wirePart      `json:"content"`
	Change  string          `json:"change"`
	State   json.RawMessage `json:"state"`
	Usage   model.Usage     `json:"usage"`
}

var errUnknownPart = errors.New("unknown part type")

// fastDecode decodes the kinds with parts; ok is false when the caller
// must fall back to session.DecodeEntry.
func fastDecode(kind string, payload []byte) (e session.Entry, ok bool) {
	var err error
	switch kind {
	case "user":
		var w wireUser
		if !decodeStrict(payload, &w) {
			return nil, false
		}
		u := session.UserMessage{Source: w.Source, Tasks: w.Tasks, Command: w.Command, Reopen: w.Reopen, Pinned: w.Pinned}
		u.Parts, err = toParts(w.Parts)
		if err == nil {
			u.Expansion, err = toParts(w.Expansion)
		}
		e = u
	case "assistant":
		var w wireAssistant
		if !decodeStrict(payload, &w) {
			return nil, false
		}
		a := session.AssistantMessage{Usage: w.Usage, Stop: w.Stop, Model: w.Model}
		a.Parts, err = toParts(w.Parts)
		e = a
	case "tool_result":
		var w wireToolResult
		if !decodeStrict(payload, &w) {
			return nil, false
		}
		r := session.ToolResult{CallID: w.CallID, Name: w.Name, Status: w.Status, Change: w.Change, State: w.State, Usage: w.Usage}
		r.Content, err = toParts(w.Content)
		e = r
	default:
		return nil, false
	}
	return e, err == nil
}

// decodeStrict decodes one JSON value that is the whole of payload and has
// no field v lacks.
func decodeStrict(payload []byte, v any) bool {
	return jsonv2.Unmarshal(payload, v, jsonv2.RejectUnknownMembers(true)) == nil
}

// toParts builds model parts from their mirrors. A list that was in the
// JSON stays non-nil when empty, as model.Parts decodes it.
func toParts(ws []wirePart) (model.Parts, error) {
	if ws == nil {
		return nil, nil
	}
	ps := make(model.Parts, len(ws))
	for i := range ws {
		w := &ws[i]
		switch w.Type {
		case "text":
			ps[i] = model.Text{Text: w.Text}
		case "image":
			ps[i] = model.Image{MediaType: w.MediaType, Data: w.Data, Name: w.Name}
		case "resource":
			ps[i] = model.Resource{URI: w.URI, Name: w.Name, MimeType: w.MimeType, Text: w.Text, Description: w.Description, Blob: w.Blob}
		case "thinking":
			ps[i] = model.Thinking{Text: w.Text, Signature: w.Signature, Redacted: w.Redacted, Provider: w.Provider}
		case "tool_call":
			ps[i] = model.ToolCall{ID: w.ID, Name: w.Name, Arguments: w.Arguments}
		case "tool_result":
			content, err := toParts(w.Content)
			if err != nil {
				return nil, err
			}
			ps[i] = model.ToolResult{CallID: w.CallID, Name: w.Name, Content: content, IsError: w.IsError}
		default:
			return nil, fmt.Errorf("%w %q", errUnknownPart, w.Type)
		}
	}
	return ps, nil
}
