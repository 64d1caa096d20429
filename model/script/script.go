// Package script is a model provider that plays back a scripted
// conversation, one round per request, so that every engine behaviour can
// be reproduced without a network. The same script format drives the
// modeltest servers, which speak the real wire formats.
//
// A script is JSON:
//
//	{"rounds": [
//	  {"thinking": "Read it first.", "text": "Let me look.",
//	   "tool_calls": [{"id": "c1", "name": "file_read", "arguments": {"path": "a.go"}}],
//	   "usage": {"input_tokens": 10, "output_tokens": 5}},
//	  {"text": "Done.", "stop": "end_turn"},
//	  {"error": {"status": 429, "body": "slow down", "retry_after": "1s"}}
//	]}
//
// Fields of a round, all optional:
//   - text: the reply's text.
//   - thinking, signature: a thinking block and the signature a provider
//     would attach to it; redacted_thinking: a redacted block's data.
//   - tool_calls: calls with id, name and arguments (any JSON, "{}" when
//     absent); raw_arguments instead gives the argument text verbatim, to
//     script a model that sends malformed JSON.
//   - stop: end_turn, tool_use, max_tokens or refusal; default tool_use
//     when the round has tool calls, else end_turn.
//   - usage: input_tokens, output_tokens, cache_read_tokens,
//     cache_write_tokens.
//   - error: the request fails instead. status is the HTTP status the
//     provider answered (0 for a connection failure), body its error text,
//     retry_after what it asked for, as a Go duration ("1s") or, verbatim,
//     a Retry-After header value (seconds or an HTTP date).
//
// It imports only package model.
package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"meka.dev/meka/model"
)

// Script is a scripted conversation: Rounds[i] answers the i-th request.
type Script struct {
	Rounds []Round `json:"rounds"`
}

// Round is one scripted model response, or one scripted failure.
type Round struct {
	Text             string           `json:"text,omitempty"`
	Thinking         string           `json:"thinking,omitempty"`
	Signature        string           `json:"signature,omitempty"`
	RedactedThinking string           `json:"redacted_thinking,omitempty"`
	ToolCalls        []ToolCall       `json:"tool_calls,omitempty"`
	Stop             model.StopReason `json:"stop,omitempty"`
	Usage            model.Usage      `json:"usage"`
	Error            *Error           `json:"error,omitempty"`
	// Stall makes a server hang, for testing timeouts: "response" sends
	// nothing at all, "stream" sends the headers and the first event and
	// then nothing more. Either hangs until the client gives up.
	Stall string `json:"stall,omitempty"`
}

// Stall values.
const (
	StallResponse = "response"
	StallStream   = "stream"
)

// ToolCall is a scripted tool call.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// RawArguments, when set, is the argument text exactly as the model
	// sends it, valid JSON or not; it overrides Arguments.
	RawArguments string `json:"raw_arguments,omitempty"`
}

// Error is a scripted provider failure.
type Error struct {
	// Status is the HTTP status; 0 is a connection failure.
	Status int    `json:"status"`
	Body   string `json:"body,omitempty"`
	// RetryAfter is a Go duration or a Retry-After header value.
	RetryAfter string `json:"retry_after,omitempty"`
}

// ErrInvalid reports a script that does not describe a conversation.
var ErrInvalid = errors.New("invalid script")

// Parse decodes and checks a script.
func Parse(b []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Load reads and parses the script file at path.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// Validate reports the first round that cannot be played.
func (s *Script) Validate() error {
	for i, r := range s.Rounds {
		if err := r.validate(); err != nil {
			return fmt.Errorf("%w: round %d: %w", ErrInvalid, i+1, err)
		}
	}
	return nil
}

func (r Round) validate() error {
	switch r.Stop {
	case "", model.StopEndTurn, model.StopToolUse, model.StopMaxTokens, model.StopRefusal:
	default:
		return fmt.Errorf("unknown stop %q", r.Stop)
	}
	switch r.Stall {
	case "", StallResponse, StallStream:
	default:
		return fmt.Errorf("unknown stall %q (response or stream)", r.Stall)
	}
	for j, c := range r.ToolCalls {
		if c.Name == "" {
			return fmt.Errorf("tool call %d has no name", j+1)
		}
	}
	if e := r.Error; e != nil {
		if e.Status != 0 && (e.Status < 400 || e.Status > 599) {
			return fmt.Errorf("error status %d is not an HTTP error", e.Status)
		}
		if e.RetryAfter != "" && e.RetryAfterHeader() == "" {
			return fmt.Errorf("bad retry_after %q", e.RetryAfter)
		}
	}
	return nil
}

// StopReason is the round's stop reason with the default applied.
func (r Round) StopReason() model.StopReason {
	switch {
	case r.Stop != "":
		return r.Stop
	case len(r.ToolCalls) > 0:
		return model.StopToolUse
	}
	return model.StopEndTurn
}

// Args is the call's argument text as the model sends it.
func (c ToolCall) Args() string {
	if c.RawArguments != "" {
		return c.RawArguments
	}
	if len(c.Arguments) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}

// RetryAfterHeader is RetryAfter as a Retry-After header value: a Go
// duration in whole seconds, rounded up, or the value itself when it
// already reads as one. It is empty when RetryAfter is empty or neither.
func (e *Error) RetryAfterHeader() string {
	if e.RetryAfter == "" {
		return ""
	}
	if d, err := time.ParseDuration(e.RetryAfter); err == nil && d >= 0 {
		return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
	}
	if _, err := strconv.ParseFloat(e.RetryAfter, 64); err == nil {
		return e.RetryAfter
	}
	if _, err := http.ParseTime(e.RetryAfter); err == nil {
		return e.RetryAfter
	}
	return ""
}

// Message is the assistant message the round answers with, its thinking
// tagged with provider.
func (r Round) Message(provider string) model.Message {
	m := model.Message{Role: model.RoleAssistant}
	if r.Thinking != "" {
		m.Parts = append(m.Parts, model.Thinking{Text: r.Thinking, Signature: r.Signature, Provider: provider})
	}
	if r.RedactedThinking != "" {
		m.Parts = append(m.Parts, model.Thinking{Redacted: r.RedactedThinking, Provider: provider})
	}
	if r.Text != "" {
		m.Parts = append(m.Parts, model.Text{Text: r.Text})
	}
	for _, c := range r.ToolCalls {
		m.Parts = append(m.Parts, model.ToolCall{ID: c.ID, Name: c.Name, Arguments: model.ToolArguments(c.Args())})
	}
	return m
}
