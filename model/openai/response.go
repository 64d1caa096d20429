package openai

import (
	"cmp"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// assembler turns chunks, or a whole completion, into events and the
// final Response.
type assembler struct {
	emit func(model.Event) bool

	model    string
	thinking strings.Builder
	text     strings.Builder
	refused  bool
	calls    []*call
	byIndex  map[int64]int // wire index to position in calls
	finish   string
	usage    model.Usage
}

type call struct {
	id, name string
	args     strings.Builder
}

// chunk takes one streamed chunk; it returns false when emit asked to
// stop.
func (a *assembler) chunk(c *completion) bool {
	if c.Model != "" {
		a.model = string(c.Model)
	}
	if c.Usage != nil {
		a.setUsage(c.Usage)
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // meka never asks for n > 1
		}
		d := &ch.Delta
		if s := d.reasoning(); s != "" && !a.addThinking(s) {
			return false
		}
		if d.Content != "" && !a.addText(string(d.Content)) {
			return false
		}
		if d.Refusal != "" {
			a.refused = true
			if !a.addText(string(d.Refusal)) {
				return false
			}
		}
		for _, tc := range d.ToolCalls {
			if !a.addCall(int64(tc.Index), string(tc.ID), string(tc.Function.Name), string(tc.Function.Arguments)) {
				return false
			}
		}
		if ch.FinishReason != "" {
			a.finish = string(ch.FinishReason)
		}
	}
	return true
}

// completion takes a whole response; it returns false when emit asked to
// stop.
func (a *assembler) completion(cc *completion) bool {
	a.model = string(cc.Model)
	if cc.Usage != nil {
		a.setUsage(cc.Usage)
	}
	for _, ch := range cc.Choices {
		if ch.Index != 0 {
			continue
		}
		m := &ch.Message
		if s := m.reasoning(); s != "" && !a.addThinking(s) {
			return false
		}
		if m.Content != "" && !a.addText(string(m.Content)) {
			return false
		}
		if m.Refusal != "" {
			a.refused = true
			if !a.addText(string(m.Refusal)) {
				return false
			}
		}
		for i, tc := range m.ToolCalls {
			if !a.addCall(int64(i), string(tc.ID), string(tc.Function.Name), string(tc.Function.Arguments)) {
				return false
			}
		}
		a.finish = string(ch.FinishReason)
	}
	return true
}

// reasoning is the reasoning text an OpenAI-compatible server put in a
// delta or message, under either name.
func (m *respMessage) reasoning() string {
	return string(cmp.Or(m.ReasoningContent, m.Reasoning))
}

func (a *assembler) addThinking(s string) bool {
	a.thinking.WriteString(s)
	return a.emit(model.ThinkingDelta{Text: s})
}

func (a *assembler) addText(s string) bool {
	a.text.WriteString(s)
	return a.emit(model.TextDelta{Text: s})
}

// addCall takes a piece of a tool call. A call's first piece carries its
// id and name; later pieces of the same index carry argument text.
func (a *assembler) addCall(index int64, id, name, args string) bool {
	if a.byIndex == nil {
		a.byIndex = map[int64]int{}
	}
	pos, ok := a.byIndex[index]
	// Some servers give every call index 0; a new id under a known index
	// is a new call.
	if ok && id != "" && a.calls[pos].id != "" && a.calls[pos].id != id {
		ok = false
	}
	ev := model.ToolCallDelta{Arguments: args}
	if !ok {
		pos = len(a.calls)
		a.byIndex[index] = pos
		a.calls = append(a.calls, &call{})
	}
	c := a.calls[pos]
	if c.id == "" && id != "" {
		c.id, ev.ID = id, id
	}
	if c.name == "" && name != "" {
		c.name, ev.Name = name, name
	}
	c.args.WriteString(args)
	ev.Index = pos
	if ev.ID == "" && ev.Name == "" && ev.Arguments == "" {
		return true
	}
	return a.emit(ev)
}

func (a *assembler) setUsage(u *usage) {
	cached := u.PromptTokensDetails.CachedTokens
	written := u.PromptTokensDetails.CacheWriteTokens
	a.usage = model.Usage{
		InputTokens:      int(max(u.PromptTokens-cached-written, 0)),
		OutputTokens:     int(u.CompletionTokens),
		CacheReadTokens:  int(cached),
		CacheWriteTokens: int(written),
	}
}

// response assembles what was received. A stream that ended without a
// finish reason was cut short.
func (a *assembler) response() (model.Response, error) {
	if a.finish == "" {
		return model.Response{}, fmt.Errorf("read openai stream: %w", model.ErrNoResponse)
	}
	msg := model.Message{Role: model.RoleAssistant}
	if a.thinking.Len() > 0 {
		msg.Parts = append(msg.Parts, model.Thinking{Text: a.thinking.String(), Provider: Name})
	}
	if a.text.Len() > 0 {
		msg.Parts = append(msg.Parts, model.Text{Text: a.text.String()})
	}
	for _, c := range a.calls {
		msg.Parts = append(msg.Parts, model.ToolCall{ID: c.id, Name: c.name, Arguments: model.ToolArguments(c.args.String())})
	}
	return model.Response{Message: msg, Usage: a.usage, Stop: a.stop(), Model: a.model}, nil
}

func (a *assembler) stop() model.StopReason {
	switch {
	case a.refused, a.finish == "content_filter":
		return model.StopRefusal
	case a.finish == "length":
		return model.StopMaxTokens
	case len(a.calls) > 0:
		// Some servers (Ollama among them) say "stop" after tool calls.
		return model.StopToolUse
	}
	return model.StopEndTurn
}
