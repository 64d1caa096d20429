package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// openAIWire speaks OpenAI Chat Completions, with thinking as the
// reasoning_content deltas that OpenAI-compatible servers (vLLM,
// llama.cpp, DeepSeek) stream.
type openAIWire struct{}

// created is a fixed timestamp so recorded responses are reproducible.
const created = 1767225600

var openAIFinish = map[model.StopReason]string{
	model.StopEndTurn:   "stop",
	model.StopToolUse:   "tool_calls",
	model.StopMaxTokens: "length",
	model.StopRefusal:   "content_filter",
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"`
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaMessage struct {
	Role             string       `json:"role,omitempty"`
	Content          *string      `json:"content,omitempty"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
}

type oaChoice struct {
	Index        int        `json:"index"`
	Message      *oaMessage `json:"message,omitempty"`
	Delta        *oaMessage `json:"delta,omitempty"`
	FinishReason *string    `json:"finish_reason"`
	Logprobs     any        `json:"logprobs"`
}

type oaPromptDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

type oaUsage struct {
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	TotalTokens         int             `json:"total_tokens"`
	PromptTokensDetails oaPromptDetails `json:"prompt_tokens_details"`
}

type oaCompletion struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	// Usage is an *oaUsage, or JSON null on the chunks of a stream that
	// asked for usage, as OpenAI sends them.
	Usage any `json:"usage,omitempty"`
}

func openAIUsage(u model.Usage) *oaUsage {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	return &oaUsage{
		PromptTokens:     prompt,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      prompt + u.OutputTokens,
		PromptTokensDetails: oaPromptDetails{
			CachedTokens:     u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens,
		},
	}
}

func (openAIWire) writeError(w http.ResponseWriter, status int, body, retryAfter string) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	b := errorBody(body, func(msg string) any {
		return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
	})
	writeErrorBody(w, status, b, retryAfter)
}

func (openAIWire) writeJSON(w http.ResponseWriter, r *script.Round, req *request) {
	msg := &oaMessage{Role: "assistant", ReasoningContent: r.Thinking}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msg.Content = &r.Text
	}
	for _, c := range r.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, oaToolCall{ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name, Arguments: c.Args()}})
	}
	finish := openAIFinish[r.StopReason()]
	writeJSON(w, http.StatusOK, oaCompletion{
		ID:      fmt.Sprintf("chatcmpl-modeltest-%d", req.seq),
		Object:  "chat.completion",
		Created: created,
		Model:   req.Model,
		Choices: []oaChoice{{Message: msg, FinishReason: &finish}},
		Usage:   openAIUsage(r.Usage),
	})
}

func (openAIWire) writeStream(w http.ResponseWriter, r *script.Round, req *request) {
	s := sse{w}
	includeUsage := req.StreamOptions.IncludeUsage
	chunk := func(delta *oaMessage, finish *string) {
		c := oaCompletion{
			ID:      fmt.Sprintf("chatcmpl-modeltest-%d", req.seq),
			Object:  "chat.completion.chunk",
			Created: created,
			Model:   req.Model,
			Choices: []oaChoice{{Delta: delta, FinishReason: finish}},
		}
		if includeUsage {
			c.Usage = json.RawMessage("null")
		}
		s.event("", c)
	}
	empty := ""
	chunk(&oaMessage{Role: "assistant", Content: &empty}, nil)
	for _, piece := range script.Chunks(r.Thinking, 3) {
		chunk(&oaMessage{ReasoningContent: piece}, nil)
	}
	for _, piece := range script.Chunks(r.Text, 3) {
		chunk(&oaMessage{Content: &piece}, nil)
	}
	for i, c := range r.ToolCalls {
		// The first delta of a call names it; its arguments follow in
		// pieces that are not JSON on their own.
		chunk(&oaMessage{ToolCalls: []oaToolCall{{Index: &i, ID: c.ID, Type: "function", Function: oaFunction{Name: c.Name}}}}, nil)
		for _, piece := range script.Chunks(c.Args(), 3) {
			chunk(&oaMessage{ToolCalls: []oaToolCall{{Index: &i, Function: oaFunction{Arguments: piece}}}}, nil)
		}
	}
	if req.stallEnd() {
		return
	}
	finish := openAIFinish[r.StopReason()]
	chunk(&oaMessage{}, &finish)
	if includeUsage {
		s.event("", oaCompletion{
			ID:      fmt.Sprintf("chatcmpl-modeltest-%d", req.seq),
			Object:  "chat.completion.chunk",
			Created: created,
			Model:   req.Model,
			Choices: []oaChoice{},
			Usage:   openAIUsage(r.Usage),
		})
	}
	s.raw([]byte("data: [DONE]\n\n"))
}
