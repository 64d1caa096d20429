package gemini

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"meka.dev/meka/model"
)

// assembler turns chunks into events and the final Response, keeping
// the model turn's parts as Gemini sent them.
type assembler struct {
	emit func(model.Event) bool

	model    string
	parts    []*kept
	signed   bool // some part carried a thought signature, or was a thought
	thinking strings.Builder
	text     strings.Builder
	calls    []model.ToolCall
	finish   string
	blocked  string
	usage    model.Usage
}

// kept is one part of the model turn: plain text or thought pieces
// merged, or a part kept whole as its bytes.
type kept struct {
	thought bool
	text    *strings.Builder // nil for a part kept whole
	raw     []byte
}

// chunk takes one event's data; it returns false when emit asked to
// stop.
func (a *assembler) chunk(data []byte) (bool, error) {
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return false, fmt.Errorf("read %s stream: event %s: %w", Name, model.Cap(string(data), 200), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return false, streamError(data)
	}
	if c.ModelVersion != "" {
		a.model = string(c.ModelVersion)
	}
	if u := c.UsageMetadata; u != nil {
		a.usage = model.Usage{
			InputTokens:     int(max(u.PromptTokenCount-u.CachedContentTokenCount, 0)),
			CacheReadTokens: int(u.CachedContentTokenCount),
			OutputTokens:    int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
		}
	}
	if f := c.PromptFeedback; f != nil && f.BlockReason != "" {
		a.blocked = string(f.BlockReason)
	}
	for _, cand := range c.Candidates {
		if cand.Index != 0 {
			continue // meka asks for one candidate
		}
		for _, raw := range cand.Content.Parts {
			if !a.part(raw) {
				return false, nil
			}
		}
		if cand.FinishReason != "" {
			a.finish = string(cand.FinishReason)
		}
	}
	return true, nil
}

func (a *assembler) part(raw json.RawMessage) bool {
	var p part
	if json.Unmarshal(raw, &p) != nil {
		return true
	}
	if p.Thought || p.ThoughtSignature != "" {
		a.signed = true
	}
	if p.Text != nil && p.ThoughtSignature == "" && p.FunctionCall == nil {
		// A piece of plain text or thought: merged into the part before
		// when that is of its kind.
		if n := len(a.parts); n > 0 && a.parts[n-1].text != nil && a.parts[n-1].thought == p.Thought {
			a.parts[n-1].text.WriteString(*p.Text)
		} else {
			k := &kept{thought: p.Thought, text: &strings.Builder{}}
			k.text.WriteString(*p.Text)
			a.parts = append(a.parts, k)
		}
		return a.say(p.Thought, *p.Text)
	}
	// Anything signed or not text is kept as it came.
	a.parts = append(a.parts, &kept{raw: append([]byte(nil), raw...)})
	if p.Text != nil && !a.say(p.Thought, *p.Text) {
		return false
	}
	if fc := p.FunctionCall; fc != nil {
		id := string(fc.ID)
		if id == "" {
			id = newCallID()
		}
		args := "{}"
		if len(fc.Args) > 0 && string(fc.Args) != "null" {
			args = string(fc.Args)
		}
		call := model.ToolCall{ID: id, Name: string(fc.Name), Arguments: model.ToolArguments(args)}
		a.calls = append(a.calls, call)
		return a.emit(model.ToolCallDelta{Index: len(a.calls) - 1, ID: id, Name: call.Name, Arguments: args})
	}
	return true
}

func (a *assembler) say(thought bool, t string) bool {
	if t == "" {
		return true
	}
	if thought {
		a.thinking.WriteString(t)
		return a.emit(model.ThinkingDelta{Text: t})
	}
	a.text.WriteString(t)
	return a.emit(model.TextDelta{Text: t})
}

// newCallID names a call Gemini sent without an id.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return callPrefix + hex.EncodeToString(b[:])
}

// response assembles what was received. A stream that ended before a
// finish reason (or a blocked prompt) was cut short.
func (a *assembler) response() (model.Response, error) {
	if a.finish == "" && a.blocked == "" {
		return model.Response{}, fmt.Errorf("read %s stream: %w", Name, model.ErrNoResponse)
	}
	msg := model.Message{Role: model.RoleAssistant}
	if a.signed {
		msg.Parts = append(msg.Parts, model.Thinking{Text: a.thinking.String(), Signature: a.rawParts(), Provider: Name})
	}
	if a.text.Len() > 0 {
		msg.Parts = append(msg.Parts, model.Text{Text: a.text.String()})
	}
	for _, c := range a.calls {
		msg.Parts = append(msg.Parts, c)
	}
	return model.Response{Message: msg, Usage: a.usage, Stop: a.stop(), Model: a.model}, nil
}

// rawParts is the model turn as a JSON array of its parts.
func (a *assembler) rawParts() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, k := range a.parts {
		if i > 0 {
			b.WriteByte(',')
		}
		if k.text == nil {
			b.Write(k.raw)
			continue
		}
		var enc []byte
		if k.thought {
			enc, _ = encode(thoughtPart{Text: k.text.String(), Thought: true})
		} else {
			enc, _ = encode(textPart{Text: k.text.String()})
		}
		b.Write(enc)
	}
	b.WriteByte(']')
	return b.String()
}

func (a *assembler) stop() model.StopReason {
	switch a.finish {
	case "MAX_TOKENS":
		return model.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return model.StopRefusal
	}
	if a.blocked != "" {
		return model.StopRefusal
	}
	if len(a.calls) > 0 {
		return model.StopToolUse
	}
	return model.StopEndTurn
}
