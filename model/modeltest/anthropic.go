package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// anthropicWire speaks Anthropic Messages.
type anthropicWire struct{}

var anthropicErrorType = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusMethodNotAllowed:      "invalid_request_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	529:                              "overloaded_error",
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

func anthropicUsage(u model.Usage) anUsage {
	return anUsage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheReadInputTokens:     u.CacheReadTokens,
		CacheCreationInputTokens: u.CacheWriteTokens,
	}
}

type anMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

// anBlock is a content block; which fields are set depends on Type.
type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Data      string          `json:"data,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

// signature is the round's thinking signature, made up when the script
// has none, so replay of signed thinking can always be checked.
func signature(r *script.Round, req *request) string {
	if r.Signature != "" {
		return r.Signature
	}
	return fmt.Sprintf("modeltest-signature-%d", req.seq)
}

// blocks are the round's content blocks in the order Claude sends them,
// each tool call's input given by input.
func blocks(r *script.Round, req *request, input func(script.ToolCall) json.RawMessage) []anBlock {
	var out []anBlock
	if r.Thinking != "" {
		sig := signature(r, req)
		out = append(out, anBlock{Type: "thinking", Thinking: &r.Thinking, Signature: &sig})
	}
	if r.RedactedThinking != "" {
		out = append(out, anBlock{Type: "redacted_thinking", Data: r.RedactedThinking})
	}
	if r.Text != "" {
		out = append(out, anBlock{Type: "text", Text: &r.Text})
	}
	for _, c := range r.ToolCalls {
		out = append(out, anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input(c)})
	}
	return out
}

func (anthropicWire) writeError(w http.ResponseWriter, status int, body, retryAfter string) {
	typ := anthropicErrorType[status]
	if typ == "" {
		typ = "api_error"
	}
	b := errorBody(body, func(msg string) any {
		return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	})
	writeErrorBody(w, status, b, retryAfter)
}

func (anthropicWire) writeJSON(w http.ResponseWriter, r *script.Round, req *request) {
	stop := string(r.StopReason())
	writeJSON(w, http.StatusOK, anMessage{
		ID:    fmt.Sprintf("msg_modeltest_%d", req.seq),
		Type:  "message",
		Role:  "assistant",
		Model: req.Model,
		Content: blocks(r, req, func(c script.ToolCall) json.RawMessage {
			return model.ToolArguments(c.Args())
		}),
		StopReason: &stop,
		Usage:      anthropicUsage(r.Usage),
	})
}

// anEvent is a stream event; which fields are set depends on Type.
type anEvent struct {
	Type         string     `json:"type"`
	Message      *anMessage `json:"message,omitempty"`
	Index        *int       `json:"index,omitempty"`
	ContentBlock *anBlock   `json:"content_block,omitempty"`
	Delta        any        `json:"delta,omitempty"`
	Usage        any        `json:"usage,omitempty"`
}

type anDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type anMessageDelta struct {
	StopReason   model.StopReason `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
}

func (anthropicWire) writeStream(w http.ResponseWriter, r *script.Round, req *request) {
	s := sse{w}
	send := func(ev anEvent) { s.event(ev.Type, ev) }
	start := anthropicUsage(r.Usage)
	start.OutputTokens = min(start.OutputTokens, 1) // Claude reports a placeholder until message_delta
	send(anEvent{Type: "message_start", Message: &anMessage{
		ID:      fmt.Sprintf("msg_modeltest_%d", req.seq),
		Type:    "message",
		Role:    "assistant",
		Model:   req.Model,
		Content: []anBlock{},
		Usage:   start,
	}})
	send(anEvent{Type: "ping"})

	delta := func(i int, d anDelta) { send(anEvent{Type: "content_block_delta", Index: &i, Delta: d}) }
	empty := ""
	content := blocks(r, req, func(script.ToolCall) json.RawMessage { return json.RawMessage("{}") })
	calls := r.ToolCalls
	for i, b := range content {
		// A block starts empty and its content follows in deltas.
		startBlock := b
		switch b.Type {
		case "thinking":
			startBlock.Thinking, startBlock.Signature = &empty, &empty
		case "text":
			startBlock.Text = &empty
		}
		send(anEvent{Type: "content_block_start", Index: &i, ContentBlock: &startBlock})
		switch b.Type {
		case "thinking":
			for _, piece := range script.Chunks(*b.Thinking, 3) {
				delta(i, anDelta{Type: "thinking_delta", Thinking: &piece})
			}
			delta(i, anDelta{Type: "signature_delta", Signature: b.Signature})
		case "text":
			for _, piece := range script.Chunks(*b.Text, 3) {
				delta(i, anDelta{Type: "text_delta", Text: &piece})
			}
		case "tool_use":
			c := calls[0]
			calls = calls[1:]
			for _, piece := range script.Chunks(c.Args(), 3) {
				delta(i, anDelta{Type: "input_json_delta", PartialJSON: &piece})
			}
		}
		send(anEvent{Type: "content_block_stop", Index: &i})
	}
	if req.stallEnd() {
		return
	}
	send(anEvent{
		Type:  "message_delta",
		Delta: anMessageDelta{StopReason: r.StopReason()},
		Usage: map[string]int{"output_tokens": r.Usage.OutputTokens},
	})
	send(anEvent{Type: "message_stop"})
}
