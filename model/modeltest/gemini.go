package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// geminiWire speaks the Gemini API (POST /v1beta/models/MODEL:
// streamGenerateContent?alt=sse and :generateContent): thinking streams
// as thought parts, the round's signature (made up when it has none) is
// the thoughtSignature of its first call, or of an empty last part when
// it has no calls, as Gemini signs them. Calls carry no id, as Gemini
// sends them. A 429 or 503 carries its wait as google.rpc.RetryInfo in
// the body, not in a header.
type geminiWire struct{}

// geminiModel is the model a Gemini path names, and whether it asks for
// a stream.
func geminiModel(path string) (name string, stream, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1beta/models/")
	if !found {
		return "", false, false
	}
	if m, ok := strings.CutSuffix(rest, ":streamGenerateContent"); ok {
		return m, true, true
	}
	if m, ok := strings.CutSuffix(rest, ":generateContent"); ok {
		return m, false, true
	}
	return "", false, false
}

var geminiFinish = map[model.StopReason]string{
	model.StopEndTurn:   "STOP",
	model.StopToolUse:   "STOP",
	model.StopMaxTokens: "MAX_TOKENS",
	model.StopRefusal:   "SAFETY",
}

type gmPart struct {
	Text             *string `json:"text,omitempty"`
	Thought          bool    `json:"thought,omitempty"`
	FunctionCall     any     `json:"functionCall,omitempty"`
	ThoughtSignature string  `json:"thoughtSignature,omitempty"`
}

type gmCandidate struct {
	Content      gmContent `json:"content"`
	FinishReason string    `json:"finishReason,omitempty"`
	Index        int       `json:"index"`
}

type gmContent struct {
	Role  string   `json:"role"`
	Parts []gmPart `json:"parts"`
}

type gmUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

type gmResponse struct {
	Candidates    []gmCandidate `json:"candidates"`
	UsageMetadata gmUsage       `json:"usageMetadata"`
	ModelVersion  string        `json:"modelVersion"`
	ResponseID    string        `json:"responseId"`
}

func geminiUsage(u model.Usage, final bool) gmUsage {
	prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	g := gmUsage{PromptTokenCount: prompt, CachedContentTokenCount: u.CacheReadTokens, TotalTokenCount: prompt}
	if final {
		g.CandidatesTokenCount = u.OutputTokens
		g.TotalTokenCount += u.OutputTokens
	}
	return g
}

// geminiParts are the round's parts, signed as Gemini signs them.
func geminiParts(r *script.Round, req *request) []gmPart {
	sig := r.Signature
	if sig == "" {
		sig = fmt.Sprintf("modeltest-signature-%d", req.seq)
	}
	var out []gmPart
	if r.Thinking != "" {
		out = append(out, gmPart{Text: &r.Thinking, Thought: true})
	}
	if r.Text != "" {
		out = append(out, gmPart{Text: &r.Text})
	}
	for i, c := range r.ToolCalls {
		p := gmPart{FunctionCall: map[string]any{"name": c.Name, "args": json.RawMessage(model.ToolArguments(c.Args()))}}
		if i == 0 {
			p.ThoughtSignature = sig
		}
		out = append(out, p)
	}
	if len(r.ToolCalls) == 0 {
		empty := ""
		out = append(out, gmPart{Text: &empty, ThoughtSignature: sig})
	}
	return out
}

var geminiStatus = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

func (geminiWire) writeError(w http.ResponseWriter, status int, body, retryAfter string) {
	b := errorBody(body, func(msg string) any {
		e := map[string]any{"code": status, "message": msg, "status": geminiStatus[status]}
		if retryAfter != "" {
			e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryAfter + "s"}}
		}
		return map[string]any{"error": e}
	})
	writeErrorBody(w, status, b, "")
}

func (geminiWire) writeJSON(w http.ResponseWriter, r *script.Round, req *request) {
	writeJSON(w, http.StatusOK, gmResponse{
		Candidates:    []gmCandidate{{Content: gmContent{Role: "model", Parts: geminiParts(r, req)}, FinishReason: geminiFinish[r.StopReason()]}},
		UsageMetadata: geminiUsage(r.Usage, true),
		ModelVersion:  req.Model,
		ResponseID:    fmt.Sprintf("modeltest-%d", req.seq),
	})
}

func (geminiWire) writeStream(w http.ResponseWriter, r *script.Round, req *request) {
	s := sse{w}
	send := func(parts []gmPart, finish string, final bool) {
		s.event("", gmResponse{
			Candidates:    []gmCandidate{{Content: gmContent{Role: "model", Parts: parts}, FinishReason: finish}},
			UsageMetadata: geminiUsage(r.Usage, final),
			ModelVersion:  req.Model,
			ResponseID:    fmt.Sprintf("modeltest-%d", req.seq),
		})
	}
	parts := geminiParts(r, req)
	last := len(parts) - 1
	for i, p := range parts {
		if i == last && req.stallEnd() {
			return
		}
		// Text streams in pieces; a signed or call part comes whole.
		if p.Text != nil && p.ThoughtSignature == "" && p.FunctionCall == nil {
			for _, piece := range script.Chunks(*p.Text, 3) {
				send([]gmPart{{Text: &piece, Thought: p.Thought}}, "", false)
			}
			continue
		}
		finish := ""
		if i == last {
			finish = geminiFinish[r.StopReason()]
		}
		send([]gmPart{p}, finish, i == last)
	}
}
