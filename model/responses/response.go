package responses

import (
	"encoding/json"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// assembler turns stream events into model events and the final
// Response, keeping output items in the order the model produced them.
type assembler struct {
	emit func(model.Event) bool

	model   string
	items   []*slot
	byIndex map[int64]*slot
	calls   int
	refused bool
	// final says a terminal event (completed or incomplete) was read.
	final  bool
	reason string // incomplete_details.reason
	usage  model.Usage
}

// slot is one output item being streamed.
type slot struct {
	kind string // "message", "function_call", "reasoning", or another
	// call is the item's position among the reply's calls.
	call         int
	callID, name string
	text         strings.Builder // message text, call arguments or reasoning summary
	raw          []byte          // the reasoning item as output_item.done sent it
	done         bool
}

// event takes one event's data. It returns false when the stream is over
// (a terminal event) or the consumer stopped; a.final tells which.
func (a *assembler) event(data []byte) (bool, error) {
	var ev event
	if err := json.Unmarshal(data, &ev); err != nil {
		return false, fmt.Errorf("read %s stream: event %s: %w", Name, model.Cap(string(data), 200), err)
	}
	switch ev.Type {
	case "response.created", "response.in_progress", "response.queued":
		if ev.Response != nil && ev.Response.Model != "" {
			a.model = string(ev.Response.Model)
		}
	case "response.output_item.added":
		var it item
		_ = json.Unmarshal(ev.Item, &it)
		s := a.slot(int64(ev.OutputIndex), string(it.Type))
		if s != nil && s.kind == "function_call" && s.callID == "" {
			s.callID, s.name = string(it.CallID), string(it.Name)
			return a.emit(model.ToolCallDelta{Index: s.call, ID: s.callID, Name: s.name}), nil
		}
	case "response.output_text.delta":
		return a.add(a.slot(int64(ev.OutputIndex), "message"), string(ev.Delta), textDelta), nil
	case "response.refusal.delta":
		a.refused = true
		return a.add(a.slot(int64(ev.OutputIndex), "message"), string(ev.Delta), textDelta), nil
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		return a.add(a.slot(int64(ev.OutputIndex), "reasoning"), string(ev.Delta), thinkingDelta), nil
	case "response.function_call_arguments.delta":
		s := a.slot(int64(ev.OutputIndex), "function_call")
		if s == nil {
			return true, nil
		}
		return a.add(s, string(ev.Delta), func(t string) model.Event { return model.ToolCallDelta{Index: s.call, Arguments: t} }), nil
	case "response.output_item.done":
		return a.itemDone(int64(ev.OutputIndex), ev.Item), nil
	case "response.completed", "response.incomplete":
		if r := ev.Response; r != nil {
			if r.Model != "" {
				a.model = string(r.Model)
			}
			if r.IncompleteDetails != nil {
				a.reason = string(r.IncompleteDetails.Reason)
			}
			if r.Usage != nil {
				a.setUsage(r.Usage)
			}
		}
		a.final = true
		return false, nil
	case "response.failed":
		code, msg := "", "the response failed"
		if r := ev.Response; r != nil && r.Error != nil {
			code, msg = string(r.Error.Code), string(r.Error.Message)
		}
		return false, streamError(code, msg, data)
	case "error":
		return false, streamError(string(ev.Code), string(ev.Message), data)
	}
	return true, nil
}

func textDelta(t string) model.Event     { return model.TextDelta{Text: t} }
func thinkingDelta(t string) model.Event { return model.ThinkingDelta{Text: t} }

// slot returns the item at index, opening it as kind when new; nil when
// the index holds an item of another kind, whose events are then
// ignored.
func (a *assembler) slot(index int64, kind string) *slot {
	if a.byIndex == nil {
		a.byIndex = map[int64]*slot{}
	}
	if s, ok := a.byIndex[index]; ok {
		if s.kind != kind {
			return nil
		}
		return s
	}
	s := &slot{kind: kind}
	if kind == "function_call" {
		s.call = a.calls
		a.calls++
	}
	a.byIndex[index] = s
	a.items = append(a.items, s)
	return s
}

func (a *assembler) add(s *slot, t string, ev func(string) model.Event) bool {
	if s == nil || t == "" {
		return true
	}
	s.text.WriteString(t)
	return a.emit(ev(t))
}

// itemDone takes an item whole. A reasoning item is kept as sent; what
// an item holds that its deltas did not bring (a server that streams no
// deltas) is emitted now, so the reply is always what its events add up
// to.
func (a *assembler) itemDone(index int64, raw json.RawMessage) bool {
	var it item
	if json.Unmarshal(raw, &it) != nil {
		return true
	}
	s := a.slot(index, string(it.Type))
	if s == nil || s.done {
		return true
	}
	s.done = true
	switch s.kind {
	case "reasoning":
		s.raw = append([]byte(nil), raw...)
		if s.text.Len() == 0 {
			var sum []string
			for _, p := range it.Summary {
				sum = append(sum, string(p.Text))
			}
			return a.add(s, strings.Join(sum, "\n\n"), thinkingDelta)
		}
	case "message":
		if s.text.Len() == 0 {
			var text strings.Builder
			for _, c := range it.Content {
				if c.Type == "refusal" {
					a.refused = true
					text.WriteString(string(c.Refusal))
				} else {
					text.WriteString(string(c.Text))
				}
			}
			return a.add(s, text.String(), textDelta)
		}
	case "function_call":
		if s.callID == "" {
			s.callID, s.name = string(it.CallID), string(it.Name)
			if !a.emit(model.ToolCallDelta{Index: s.call, ID: s.callID, Name: s.name}) {
				return false
			}
		}
		if s.text.Len() == 0 {
			return a.add(s, string(it.Arguments), func(t string) model.Event { return model.ToolCallDelta{Index: s.call, Arguments: t} })
		}
	}
	return true
}

// setUsage reads usage; input_tokens counts cached tokens too.
func (a *assembler) setUsage(u *usage) {
	cached := u.InputTokensDetails.CachedTokens
	written := u.InputTokensDetails.CacheWriteTokens
	a.usage = model.Usage{
		InputTokens:      int(max(u.InputTokens-cached-written, 0)),
		OutputTokens:     int(u.OutputTokens),
		CacheReadTokens:  int(cached),
		CacheWriteTokens: int(written),
	}
}

// response assembles what was received: parts in output order.
func (a *assembler) response() (model.Response, error) {
	if !a.final {
		return model.Response{}, fmt.Errorf("read %s stream: %w", Name, model.ErrNoResponse)
	}
	msg := model.Message{Role: model.RoleAssistant}
	for _, s := range a.items {
		switch s.kind {
		case "reasoning":
			if s.text.Len() > 0 || s.raw != nil {
				msg.Parts = append(msg.Parts, model.Thinking{Text: s.text.String(), Signature: string(s.raw), Provider: Name})
			}
		case "message":
			if s.text.Len() > 0 {
				msg.Parts = append(msg.Parts, model.Text{Text: s.text.String()})
			}
		case "function_call":
			msg.Parts = append(msg.Parts, model.ToolCall{ID: s.callID, Name: s.name, Arguments: model.ToolArguments(s.text.String())})
		}
	}
	return model.Response{Message: msg, Usage: a.usage, Stop: a.stop(), Model: a.model}, nil
}

func (a *assembler) stop() model.StopReason {
	switch {
	case a.refused, a.reason == "content_filter":
		return model.StopRefusal
	case a.reason == "max_output_tokens":
		return model.StopMaxTokens
	case a.calls > 0:
		return model.StopToolUse
	}
	return model.StopEndTurn
}
