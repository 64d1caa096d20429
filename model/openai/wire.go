package openai

import (
	"bytes"
	"encoding/json"
	"math"
)

// The Chat Completions wire format, only the fields meka sends and reads.
// Request field order and omission are part of the contract: a prompt
// cache matches a byte prefix, so they stay as testdata/*.raw.json pins
// them.

type chatRequest struct {
	Messages            []message      `json:"messages,omitempty"`
	Model               string         `json:"model,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	PromptCacheKey      string         `json:"prompt_cache_key,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Tools               []tool         `json:"tools,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is any request message. Content is a string or a []any of
// textPart and imagePart; nil omits it, as an assistant message of tool
// calls only has none.
type message struct {
	Content    any        `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID *string    `json:"tool_call_id,omitempty"` // set, even to "", on tool messages only
	Role       string     `json:"role"`
}

type textPart struct {
	Text string `json:"text"`
	Type string `json:"type"` // "text"
}

type imagePart struct {
	ImageURL imageURL `json:"image_url"`
	Type     string   `json:"type"` // "image_url"
}

type imageURL struct {
	URL string `json:"url"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Function callFunction `json:"function"`
	Type     string       `json:"type"` // "function"
}

type callFunction struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type tool struct {
	Function toolFunction `json:"function"`
	Type     string       `json:"type"` // "function"
}

type toolFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the schema decoded into a map and so sent with sorted
	// keys; nil omits it.
	Parameters any `json:"parameters,omitempty"`
}

// encode marshals v as the wire wants it: no HTML escaping (servers read
// "<" as written, and escaping would only grow the prompt), no trailing
// newline.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// completion is a whole response or one streamed chunk: a chunk carries
// deltas where a response carries messages.
type completion struct {
	Model   str      `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage"`
	// Error is set on an error sent in place of a chunk or a response.
	Error json.RawMessage `json:"error"`
}

type choice struct {
	Index        num         `json:"index"`
	Delta        respMessage `json:"delta"`
	Message      respMessage `json:"message"`
	FinishReason str         `json:"finish_reason"`
}

type respMessage struct {
	Content str `json:"content"`
	Refusal str `json:"refusal"`
	// Reasoning text as OpenAI-compatible servers send it: vLLM,
	// llama.cpp and DeepSeek as reasoning_content, Ollama and OpenRouter
	// as reasoning.
	ReasoningContent str            `json:"reasoning_content"`
	Reasoning        str            `json:"reasoning"`
	ToolCalls        []respToolCall `json:"tool_calls"`
}

type respToolCall struct {
	// Index is the call's position in a streamed reply; a whole reply
	// goes by the order of its calls.
	Index    num `json:"index"`
	ID       str `json:"id"`
	Function struct {
		Name      str `json:"name"`
		Arguments str `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens        num `json:"prompt_tokens"`
	CompletionTokens    num `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     num `json:"cached_tokens"`
		CacheWriteTokens num `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// str is a string field that reads a value of another type as "", so one
// server's odd field (an array, an object) does not fail a whole event;
// the SDK read fields the same way.
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	var v string
	if json.Unmarshal(b, &v) == nil {
		*s = str(v)
	}
	return nil
}

// num is a count field that reads any JSON number (some servers send
// 12.0) and reads anything else, or a number out of range, as 0.
type num int64

func (n *num) UnmarshalJSON(b []byte) error {
	var v float64
	if json.Unmarshal(b, &v) == nil && v >= 0 && v <= 1<<53 && !math.IsNaN(v) {
		*n = num(v)
	}
	return nil
}
