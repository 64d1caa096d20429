package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

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

// event takes one stream event, named by its SSE event field or else by
// its data's type. It returns false when emit asked to stop, and an error
// for an error event or an event it cannot read. Events of a type it does
// not know, such as ping or content_block_stop, are skipped unread.
func (a *assembler) event(name string, data []byte) (bool, error) {
	var ev streamEvent
	var decodeErr error
	decoded := false
	decode := func() error {
		if !decoded {
			decoded, decodeErr = true, json.Unmarshal(data, &ev)
		}
		return decodeErr
	}
	if name == "" {
		if err := decode(); err != nil {
			return false, fmt.Errorf("read anthropic stream: event: %w", err)
		}
		name = ev.Type
	}
	switch name {
	case "message_start", "content_block_start", "content_block_delta", "message_delta", "message_stop":
	case "error":
		_ = decode() // unreadable, it is still an error, of no known type
		return false, eventError(ev.Error, data)
	default:
		return true, nil
	}
	if err := decode(); err != nil {
		return false, fmt.Errorf("read anthropic stream: %s event: %w", name, err)
	}
	return a.apply(name, &ev), nil
}

// apply takes one decoded event; it returns false when emit asked to stop.
func (a *assembler) apply(typ string, ev *streamEvent) bool {
	switch typ {
	case "message_start":
		if ev.Message == nil {
			return true
		}
		a.model = ev.Message.Model
		u := ev.Message.Usage
		a.usage = model.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
	case "content_block_start":
		cb := ev.ContentBlock
		if cb == nil {
			return true
		}
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
			if len(cb.Input) > 0 {
				b.input = cb.Input
			}
			return a.emit(model.ToolCallDelta{Index: b.call, ID: b.id, Name: b.name})
		}
	case "content_block_delta":
		b := a.byWire[ev.Index]
		d := ev.Delta
		if b == nil || d == nil {
			return true
		}
		// A delta counts only on a block of its kind: a server tool's
		// input, say, is no call of meka's, and what a delta emits must
		// add up to what the response holds.
		switch {
		case d.Type == "text_delta" && b.typ == "text":
			return a.addText(b, d.Text)
		case d.Type == "thinking_delta" && b.typ == "thinking":
			return a.addThinking(b, d.Thinking)
		case d.Type == "signature_delta" && b.typ == "thinking":
			b.signature += d.Signature
		case d.Type == "input_json_delta" && b.typ == "tool_use":
			if d.PartialJSON == "" {
				return true
			}
			b.args.WriteString(d.PartialJSON)
			return a.emit(model.ToolCallDelta{Index: b.call, Arguments: d.PartialJSON})
		}
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			a.stop = ev.Delta.StopReason
		}
		// message_delta's counts are cumulative; input and cache counts
		// appear there only on some servers.
		if u := ev.Usage; u != nil {
			a.usage.OutputTokens = u.OutputTokens
			if u.InputTokens > 0 {
				a.usage.InputTokens = u.InputTokens
			}
			if u.CacheReadInputTokens > 0 {
				a.usage.CacheReadTokens = u.CacheReadInputTokens
			}
			if u.CacheCreationInputTokens > 0 {
				a.usage.CacheWriteTokens = u.CacheCreationInputTokens
			}
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
func (a *assembler) message(m *respMessage) bool {
	a.model = m.Model
	a.stop = m.StopReason
	a.done = true
	a.usage = model.Usage{
		InputTokens:      m.Usage.InputTokens,
		OutputTokens:     m.Usage.OutputTokens,
		CacheReadTokens:  m.Usage.CacheReadInputTokens,
		CacheWriteTokens: m.Usage.CacheCreationInputTokens,
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
