package modeltest

import (
	"fmt"
	"net/http"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// responsesWire speaks the OpenAI Responses API (POST /v1/responses): a
// round's thinking is a reasoning item whose summary is the text and
// whose encrypted_content is the round's signature (made up when it has
// none), so a test can check that it comes back.
type responsesWire struct{}

type rsContent struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	Refusal     string `json:"refusal,omitempty"`
	Annotations []any  `json:"annotations,omitempty"`
}

type rsSummary struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// rsItem is an output item; which fields are set depends on Type.
type rsItem struct {
	ID               string      `json:"id"`
	Type             string      `json:"type"`
	Status           string      `json:"status,omitempty"`
	Role             string      `json:"role,omitempty"`
	Content          []rsContent `json:"content,omitempty"`
	Summary          []rsSummary `json:"summary,omitempty"`
	EncryptedContent string      `json:"encrypted_content,omitempty"`
	CallID           string      `json:"call_id,omitempty"`
	Name             string      `json:"name,omitempty"`
	Arguments        *string     `json:"arguments,omitempty"`
}

type rsUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type rsResponse struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	CreatedAt         int64          `json:"created_at"`
	Status            string         `json:"status"`
	Model             string         `json:"model"`
	Output            []rsItem       `json:"output"`
	IncompleteDetails map[string]any `json:"incomplete_details,omitempty"`
	Usage             *rsUsage       `json:"usage,omitempty"`
}

// rsEvent is a stream event; which fields are set depends on Type.
type rsEvent struct {
	Type           string      `json:"type"`
	SequenceNumber int         `json:"sequence_number"`
	Response       *rsResponse `json:"response,omitempty"`
	OutputIndex    *int        `json:"output_index,omitempty"`
	ItemID         string      `json:"item_id,omitempty"`
	ContentIndex   *int        `json:"content_index,omitempty"`
	SummaryIndex   *int        `json:"summary_index,omitempty"`
	Item           *rsItem     `json:"item,omitempty"`
	Part           any         `json:"part,omitempty"`
	Delta          *string     `json:"delta,omitempty"`
	Text           *string     `json:"text,omitempty"`
	Name           string      `json:"name,omitempty"`
	Arguments      *string     `json:"arguments,omitempty"`
}

func responsesUsage(u model.Usage) *rsUsage {
	var ru rsUsage
	ru.InputTokens = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	ru.InputTokensDetails.CachedTokens = u.CacheReadTokens
	ru.InputTokensDetails.CacheWriteTokens = u.CacheWriteTokens
	ru.OutputTokens = u.OutputTokens
	ru.TotalTokens = ru.InputTokens + u.OutputTokens
	return &ru
}

// encryptedContent is what the round's reasoning item carries back.
func encryptedContent(r *script.Round, req *request) string {
	if r.Signature != "" {
		return r.Signature
	}
	return fmt.Sprintf("modeltest-encrypted-%d", req.seq)
}

// items are the round's output items, whole, in the order the model
// sends them: reasoning, the message, the calls.
func responseItems(r *script.Round, req *request) []rsItem {
	var out []rsItem
	if r.Thinking != "" || r.RedactedThinking != "" {
		it := rsItem{ID: fmt.Sprintf("rs_modeltest_%d", req.seq), Type: "reasoning", Summary: []rsSummary{}, EncryptedContent: encryptedContent(r, req)}
		if r.Thinking != "" {
			it.Summary = append(it.Summary, rsSummary{Type: "summary_text", Text: r.Thinking})
		}
		out = append(out, it)
	}
	if r.Text != "" {
		c := rsContent{Type: "output_text", Text: r.Text, Annotations: []any{}}
		if r.StopReason() == model.StopRefusal {
			c = rsContent{Type: "refusal", Refusal: r.Text}
		}
		out = append(out, rsItem{ID: fmt.Sprintf("msg_modeltest_%d", req.seq), Type: "message", Status: "completed", Role: "assistant", Content: []rsContent{c}})
	}
	for i, c := range r.ToolCalls {
		args := c.Args()
		out = append(out, rsItem{ID: fmt.Sprintf("fc_modeltest_%d_%d", req.seq, i), Type: "function_call", Status: "completed", CallID: c.ID, Name: c.Name, Arguments: &args})
	}
	return out
}

func (responsesWire) response(r *script.Round, req *request, status string, output []rsItem) *rsResponse {
	resp := &rsResponse{ID: fmt.Sprintf("resp_modeltest_%d", req.seq), Object: "response", CreatedAt: created,
		Status: status, Model: req.Model, Output: output}
	if output == nil {
		resp.Output = []rsItem{}
	}
	if status != "in_progress" {
		resp.Usage = responsesUsage(r.Usage)
	}
	if status == "incomplete" {
		resp.IncompleteDetails = map[string]any{"reason": "max_output_tokens"}
	}
	return resp
}

func (responsesWire) writeError(w http.ResponseWriter, status int, body, retryAfter string) {
	openAIWire{}.writeError(w, status, body, retryAfter)
}

func (rw responsesWire) writeJSON(w http.ResponseWriter, r *script.Round, req *request) {
	writeJSON(w, http.StatusOK, rw.response(r, req, rw.status(r), responseItems(r, req)))
}

func (responsesWire) status(r *script.Round) string {
	if r.StopReason() == model.StopMaxTokens {
		return "incomplete"
	}
	return "completed"
}

func (rw responsesWire) writeStream(w http.ResponseWriter, r *script.Round, req *request) {
	s := sse{w}
	seq := 0
	send := func(ev rsEvent) {
		ev.SequenceNumber = seq
		seq++
		s.event(ev.Type, ev)
	}
	zero := 0
	send(rsEvent{Type: "response.created", Response: rw.response(r, req, "in_progress", nil)})
	send(rsEvent{Type: "response.in_progress", Response: rw.response(r, req, "in_progress", nil)})
	items := responseItems(r, req)
	for i, it := range items {
		// An item is announced empty, filled by deltas, then sent whole.
		start := it
		switch it.Type {
		case "reasoning":
			start.Summary, start.EncryptedContent = []rsSummary{}, ""
		case "message":
			start.Status, start.Content = "in_progress", []rsContent{}
		case "function_call":
			empty := ""
			start.Status, start.Arguments = "in_progress", &empty
		}
		send(rsEvent{Type: "response.output_item.added", OutputIndex: &i, Item: &start})
		switch it.Type {
		case "reasoning":
			for j, sum := range it.Summary {
				send(rsEvent{Type: "response.reasoning_summary_part.added", ItemID: it.ID, OutputIndex: &i, SummaryIndex: &j, Part: rsSummary{Type: "summary_text"}})
				for _, piece := range script.Chunks(sum.Text, 3) {
					send(rsEvent{Type: "response.reasoning_summary_text.delta", ItemID: it.ID, OutputIndex: &i, SummaryIndex: &j, Delta: &piece})
				}
				send(rsEvent{Type: "response.reasoning_summary_text.done", ItemID: it.ID, OutputIndex: &i, SummaryIndex: &j, Text: &sum.Text})
				send(rsEvent{Type: "response.reasoning_summary_part.done", ItemID: it.ID, OutputIndex: &i, SummaryIndex: &j, Part: sum})
			}
		case "message":
			c := it.Content[0]
			kind, text := "output_text", c.Text
			if c.Type == "refusal" {
				kind, text = "refusal", c.Refusal
			}
			send(rsEvent{Type: "response.content_part.added", ItemID: it.ID, OutputIndex: &i, ContentIndex: &zero, Part: rsContent{Type: c.Type, Annotations: c.Annotations}})
			for _, piece := range script.Chunks(text, 3) {
				send(rsEvent{Type: "response." + kind + ".delta", ItemID: it.ID, OutputIndex: &i, ContentIndex: &zero, Delta: &piece})
			}
			if kind == "refusal" {
				send(rsEvent{Type: "response.refusal.done", ItemID: it.ID, OutputIndex: &i, ContentIndex: &zero})
			} else {
				send(rsEvent{Type: "response.output_text.done", ItemID: it.ID, OutputIndex: &i, ContentIndex: &zero, Text: &text})
			}
			send(rsEvent{Type: "response.content_part.done", ItemID: it.ID, OutputIndex: &i, ContentIndex: &zero, Part: c})
		case "function_call":
			for _, piece := range script.Chunks(*it.Arguments, 3) {
				send(rsEvent{Type: "response.function_call_arguments.delta", ItemID: it.ID, OutputIndex: &i, Delta: &piece})
			}
			send(rsEvent{Type: "response.function_call_arguments.done", ItemID: it.ID, OutputIndex: &i, Name: it.Name, Arguments: it.Arguments})
		}
		send(rsEvent{Type: "response.output_item.done", OutputIndex: &i, Item: &it})
	}
	if req.stallEnd() {
		return
	}
	status := rw.status(r)
	send(rsEvent{Type: "response." + status, Response: rw.response(r, req, status, items)})
}
