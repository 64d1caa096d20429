package anthropic

import "encoding/json"

// The request body, as the Messages API takes it. Only the fields meka
// sends exist. Field order and omission are part of the contract: a
// request must repeat its predecessor's bytes for the prompt cache to hit,
// and a change here changes every request's bytes, so keep the order
// (pinned by testdata/*.wire) when adding a field.

type wireRequest struct {
	MaxTokens int           `json:"max_tokens"`
	Messages  []wireMessage `json:"messages,omitempty"`
	Model     string        `json:"model,omitempty"`
	System    []*textBlock  `json:"system,omitempty"`
	Thinking  *wireThinking `json:"thinking,omitempty"`
	Tools     []*wireTool   `json:"tools,omitempty"`
	Stream    bool          `json:"stream,omitempty"`
}

type wireThinking struct {
	BudgetTokens int    `json:"budget_tokens"`
	Type         string `json:"type"` // "enabled"
}

type wireMessage struct {
	// Content holds *textBlock, *imageBlock, *thinkingBlock,
	// *redactedThinkingBlock, *toolUseBlock or *toolResultBlock.
	Content []any  `json:"content"`
	Role    string `json:"role"`
}

// cacheControl marks a prompt-cache breakpoint.
type cacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type textBlock struct {
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	Type         string        `json:"type"`
}

type imageBlock struct {
	Source       imageSource   `json:"source"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	Type         string        `json:"type"`
}

type imageSource struct {
	Data      string `json:"data"`
	MediaType string `json:"media_type"`
	Type      string `json:"type"` // "base64"
}

type thinkingBlock struct {
	Signature string `json:"signature"`
	Thinking  string `json:"thinking"`
	Type      string `json:"type"`
}

type redactedThinkingBlock struct {
	Data string `json:"data"`
	Type string `json:"type"`
}

type toolUseBlock struct {
	ID           string          `json:"id"`
	Input        json.RawMessage `json:"input"`
	Name         string          `json:"name"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
	Type         string          `json:"type"`
}

type toolResultBlock struct {
	ToolUseID    string        `json:"tool_use_id"`
	IsError      bool          `json:"is_error,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
	// Content holds *textBlock or *imageBlock.
	Content []any  `json:"content,omitempty"`
	Type    string `json:"type"`
}

type wireTool struct {
	InputSchema  inputSchema   `json:"input_schema"`
	Name         string        `json:"name"`
	Description  string        `json:"description,omitempty"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// inputSchema is a tool's JSON schema with properties, required and type
// first and every other keyword after them in sorted order, so the same
// schema always encodes to the same bytes.
type inputSchema struct {
	Properties any
	Required   []string
	Extra      map[string]any
}

func (s inputSchema) MarshalJSON() ([]byte, error) {
	b := []byte(`{"properties":`)
	v, err := json.Marshal(s.Properties)
	if err != nil {
		return nil, err
	}
	b = append(b, v...)
	if len(s.Required) > 0 {
		v, _ := json.Marshal(s.Required) // strings always encode
		b = append(b, `,"required":`...)
		b = append(b, v...)
	}
	b = append(b, `,"type":"object"`...)
	if len(s.Extra) > 0 {
		// A map encodes with sorted keys; splice its members in.
		v, err := json.Marshal(s.Extra)
		if err != nil {
			return nil, err
		}
		b = append(b, ',')
		b = append(b, v[1:len(v)-1]...)
	}
	return append(b, '}'), nil
}

// The response side: a whole message, and the stream events that build
// one. Decoding is lenient in what it ignores (unknown fields and event
// types) and strict in what it reads.

type respMessage struct {
	Type       string      `json:"type"`
	Model      string      `json:"model"`
	Content    []respBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      respUsage   `json:"usage"`
	Error      *respError  `json:"error"`
}

type respBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type respUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
}

type respError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// streamEvent is any stream event; which fields are set depends on Type.
type streamEvent struct {
	Type         string       `json:"type"`
	Message      *respMessage `json:"message"`
	Index        int64        `json:"index"`
	ContentBlock *respBlock   `json:"content_block"`
	Delta        *eventDelta  `json:"delta"`
	Usage        *respUsage   `json:"usage"`
	Error        *respError   `json:"error"`
}

// eventDelta is a content_block_delta's or a message_delta's delta.
type eventDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}
