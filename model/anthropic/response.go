package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"meka.dev/meka/model"
)

// assembler turns stream events, or a whole message, into events and the
// final Response.
type assembler struct {
	emit func(model.Event) bool

	model  string
	blocks []*block
	byWire map[int64]*block // stream index to block
	calls  int              // tool calls so far, for ToolCallDelta.Index
	stop   string
	done   bool // message_stop, or a whole message, was received
	usage  model.Usage
}

type block struct {
	typ       string // text, thinking, redacted_thinking, tool_use; others are ignored
	text      strings.Builder
	signature string
	data      string
	id, name  string
	args      strings.Builder
	input     json.RawMessage // tool_use input given whole, when no deltas follow
	call      int
}

// event takes one stream event; it returns false when emit asked to stop.
func (a *assembler) event(ev anthropic.MessageStreamEventUnion) bool {
	switch ev.Type {
	case "message_start":
		a.model = string(ev.Message.Model)
		u := ev.Message.Usage
		a.usage = model.Usage{
			InputTokens:      int(u.InputTokens),
			OutputTokens:     int(u.OutputTokens),
			CacheReadTokens:  int(u.CacheReadInputTokens),
			CacheWriteTokens: int(u.CacheCreationInputTokens),
		}
	case "content_block_start":
		cb := ev.ContentBlock
		b := a.start(ev.Index, cb.Type)
		switch cb.Type {
		case "text":
			return a.addText(b, cb.Text)
		case "thinking":
			b.signature = cb.Signature
			return a.addThinking(b, cb.Thinking)
		case "redacted_thinking":
			b.data = cb.Data
		case "tool_use":
			b.id, b.name = cb.ID, cb.Name
			if raw := cb.JSON.Input.Raw(); raw != "" {
				b.input = json.RawMessage(raw)
			}
			return a.emit(model.ToolCallDelta{Index: b.call, ID: b.id, Name: b.name})
		}
	case "content_block_delta":
		b := a.byWire[ev.Index]
		if b == nil {
			return true
		}
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			return a.addText(b, d.Text)
		case "thinking_delta":
			return a.addThinking(b, d.Thinking)
		case "signature_delta":
			b.signature += d.Signature
		case "input_json_delta":
			if d.PartialJSON == "" {
				return true
			}
			b.args.WriteString(d.PartialJSON)
			return a.emit(model.ToolCallDelta{Index: b.call, Arguments: d.PartialJSON})
		}
	case "message_delta":
		if ev.Delta.StopReason != "" {
			a.stop = string(ev.Delta.StopReason)
		}
		// message_delta's counts are cumulative; input counts appear
		// there only on some servers.
		u := ev.Usage
		a.usage.OutputTokens = int(u.OutputTokens)
		if u.InputTokens > 0 {
			a.usage.InputTokens = int(u.InputTokens)
		}
		if u.CacheReadInputTokens > 0 {
			a.usage.CacheReadTokens = int(u.CacheReadInputTokens)
		}
		if u.CacheCreationInputTokens > 0 {
			a.usage.CacheWriteTokens = int(u.CacheCreationInputTokens)
		}
	case "message_stop":
		a.done = true
	}
	return true
}

func (a *assembler) start(index int64, typ string) *block {
	b := &block{typ: typ}
	if typ == "tool_use" {
		b.call = a.calls
		a.calls++
	}
	if a.byWire == nil {
		a.byWire = map[int64]*block{}
	}
	a.byWire[index] = b
	a.blocks = append(a.blocks, b)
	return b
}

func (a *assembler) addText(b *block, s string) bool {
	if s == "" {
		return true
	}
	b.text.WriteString(s)
	return a.emit(model.TextDelta{Text: s})
}

func (a *assembler) addThinking(b *block, s string) bool {
	if s == "" {
		return true
	}
	b.text.WriteString(s)
	return a.emit(model.ThinkingDelta{Text: s})
}

// message takes a whole response; it returns false when emit asked to
// stop.
func (a *assembler) message(m *anthropic.Message) bool {
	a.model = string(m.Model)
	a.stop = string(m.StopReason)
	a.done = true
	a.usage = model.Usage{
		InputTokens:      int(m.Usage.InputTokens),
		OutputTokens:     int(m.Usage.OutputTokens),
		CacheReadTokens:  int(m.Usage.CacheReadInputTokens),
		CacheWriteTokens: int(m.Usage.CacheCreationInputTokens),
	}
	for i, cb := range m.Content {
		b := a.start(int64(i), cb.Type)
		ok := true
		switch cb.Type {
		case "text":
			ok = a.addText(b, cb.Text)
		case "thinking":
			b.signature = cb.Signature
			ok = a.addThinking(b, cb.Thinking)
		case "redacted_thinking":
			b.data = cb.Data
		case "tool_use":
			b.id, b.name, b.input = cb.ID, cb.Name, cb.Input
			ok = a.emit(model.ToolCallDelta{Index: b.call, ID: b.id, Name: b.name, Arguments: string(cb.Input)})
		}
		if !ok {
			return false
		}
	}
	return true
}

// response assembles what was received. A stream that ended before
// message_stop was cut short.
func (a *assembler) response() (model.Response, error) {
	if !a.done {
		return model.Response{}, fmt.Errorf("read anthropic stream: %w", model.ErrNoResponse)
	}
	msg := model.Message{Role: model.RoleAssistant}
	for _, b := range a.blocks {
		switch b.typ {
		case "text":
			if b.text.Len() > 0 {
				msg.Parts = append(msg.Parts, model.Text{Text: b.text.String()})
			}
		case "thinking":
			msg.Parts = append(msg.Parts, model.Thinking{Text: b.text.String(), Signature: b.signature, Provider: Name})
		case "redacted_thinking":
			msg.Parts = append(msg.Parts, model.Thinking{Redacted: b.data, Provider: Name})
		case "tool_use":
			args := b.args.String()
			if args == "" {
				args = string(b.input)
			}
			msg.Parts = append(msg.Parts, model.ToolCall{ID: b.id, Name: b.name, Arguments: model.ToolArguments(args)})
		}
	}
	return model.Response{Message: msg, Usage: a.usage, Stop: a.stopReason(), Model: a.model}, nil
}

func (a *assembler) stopReason() model.StopReason {
	switch a.stop {
	case "tool_use":
		return model.StopToolUse
	case "max_tokens", "model_context_window_exceeded":
		return model.StopMaxTokens
	case "refusal":
		return model.StopRefusal
	case "end_turn", "stop_sequence", "pause_turn":
		return model.StopEndTurn
	}
	if a.calls > 0 {
		return model.StopToolUse
	}
	return model.StopEndTurn
}
