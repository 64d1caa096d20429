// Package model is meka's provider-neutral vocabulary: messages and their
// parts, tool calls, usage, stop reasons, and the streaming Provider
// contract that every adapter (openai, anthropic, script) implements.
//
// It is a leaf package: it imports nothing from meka, and no provider SDK
// type ever appears here.
package model

import (
	"context"
	"encoding/json"
	"iter"
)

// Role says who a message is from.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool carries tool results answering the previous assistant
	// message's calls, in call order.
	RoleTool Role = "tool"
)

// Message is one entry of a conversation as the model sees it.
type Message struct {
	Role  Role  `json:"role"`
	Parts Parts `json:"parts"`
}

// Text returns the concatenated text parts of m.
func (m Message) Text() string {
	var s string
	for _, p := range m.Parts {
		if t, ok := p.(Text); ok {
			s += t.Text
		}
	}
	return s
}

// ToolCalls returns m's tool calls in order.
func (m Message) ToolCalls() []ToolCall {
	var calls []ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(ToolCall); ok {
			calls = append(calls, c)
		}
	}
	return calls
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is everything one model call is given.
type Request struct {
	System          string
	Messages        []Message
	Tools           []ToolSpec
	MaxOutputTokens int
	// Vision says the model accepts images; without it adapters replace an
	// image part with a short text saying one was omitted.
	Vision bool
	// Context is the per-request context (plan reminder, schedule index,
	// memories): rebuilt for every request and never stored. Adapters send
	// it after Messages as a block of its own, outside the cached prefix,
	// so that System, Tools and Messages stay a byte-stable prefix from one
	// request to the next.
	Context Parts
	// SystemContext is per-request text that belongs to the system
	// instructions (write_todos' list, which seed 003 puts "into the
	// system prompt on every single turn"): sent after System as system
	// text, rebuilt for every request and never stored.
	SystemContext string
	// Reminder is a per-request system reminder that is the last thing the
	// model reads (update_plan's plan, seed 001's "trailing system
	// reminder"): in the system role where the wire has one after the
	// conversation, else marked as a system reminder in the final turn;
	// never as the user's words, never stored.
	Reminder string
	// CacheKey groups the requests of one conversation for providers that
	// route by key to a warm prompt cache (OpenAI's prompt_cache_key).
	CacheKey string
}

// StopReason says why the model stopped producing output.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
)

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// Cost is what the call cost in US dollars, an estimate from the
	// model's price (see WithPrices); 0 when the price is unknown.
	Cost float64 `json:"cost,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + v.InputTokens,
		OutputTokens:     u.OutputTokens + v.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + v.CacheWriteTokens,
		Cost:             u.Cost + v.Cost,
	}
}

// Context is the number of tokens the request occupied in the model's
// context window, cached or not.
func (u Usage) Context() int {
	return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens + u.OutputTokens
}

// Response is the assembled outcome of one model call.
type Response struct {
	// Message is the assistant message: text, thinking and tool calls in the
	// order the model produced them.
	Message Message
	Usage   Usage
	Stop    StopReason
	// Model is the model that answered, as the provider reported it.
	Model string
	// RateLimit is what the response's headers said of the account's
	// limits; nil when they said nothing.
	RateLimit *RateLimit
}

// Provider streams one model call. Implementations must be safe for
// concurrent use by several sessions.
//
// Stream yields deltas as they arrive and ends with exactly one Completed
// event, or with a non-nil error (of type *Error where the provider
// answered). Retries happen inside Stream, and only before the first event
// is yielded. Breaking out of the loop or canceling ctx aborts the call.
type Provider interface {
	// Name identifies the wire format ("openai", "anthropic", "script"); it
	// tags thinking so it is never replayed to another provider.
	Name() string
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Collect drains a stream and returns its Response, calling each for every
// event first when it is not nil.
func Collect(seq iter.Seq2[Event, error], each func(Event)) (*Response, error) {
	var resp *Response
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		if each != nil {
			each(ev)
		}
		if c, ok := ev.(Completed); ok {
			r := c.Response
			resp = &r
		}
	}
	if resp == nil {
		return nil, ErrNoResponse
	}
	return resp, nil
}
