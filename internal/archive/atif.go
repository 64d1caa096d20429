package archive

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// ATIFVersion is the Agent Trajectory Interchange Format version written:
// Harbor's RFC 0001, whose fields as of v1.4 meka fills.
const ATIFVersion = "ATIF-v1.4"

type atifTrajectory struct {
	SchemaVersion string            `json:"schema_version"`
	SessionID     string            `json:"session_id"`
	Agent         atifAgent         `json:"agent"`
	Steps         []atifStep        `json:"steps"`
	Notes         string            `json:"notes,omitempty"`
	FinalMetrics  *atifFinalMetrics `json:"final_metrics,omitempty"`
	Extra         map[string]any    `json:"extra,omitempty"`
}

type atifAgent struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	ModelName string         `json:"model_name,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
}

type atifStep struct {
	StepID           int              `json:"step_id"`
	Timestamp        string           `json:"timestamp,omitempty"`
	Source           string           `json:"source"`
	ModelName        string           `json:"model_name,omitempty"`
	Message          string           `json:"message"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
	ToolCalls        []atifToolCall   `json:"tool_calls,omitempty"`
	Observation      *atifObservation `json:"observation,omitempty"`
	Metrics          *atifMetrics     `json:"metrics,omitempty"`
	Extra            map[string]any   `json:"extra,omitempty"`
}

type atifToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"`
}

type atifObservation struct {
	Results []atifResult `json:"results"`
}

type atifResult struct {
	SourceCallID string         `json:"source_call_id,omitempty"`
	Content      string         `json:"content,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

type atifMetrics struct {
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	CachedTokens     int            `json:"cached_tokens,omitempty"`
	CostUSD          float64        `json:"cost_usd,omitempty"`
	Extra            map[string]any `json:"extra,omitempty"`
}

type atifFinalMetrics struct {
	TotalPromptTokens     int     `json:"total_prompt_tokens"`
	TotalCompletionTokens int     `json:"total_completion_tokens"`
	TotalCachedTokens     int     `json:"total_cached_tokens"`
	TotalCostUSD          float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            int     `json:"total_steps"`
}

// WriteATIF writes s as an ATIF trajectory: the system prompt as a system
// step, each user message a user step, each model response an agent step
// (one model call a step, as the RFC asks) carrying its tool calls and, as
// its observation, their results; notices and compactions are system
// steps. agentVersion is meka's version.
func WriteATIF(w io.Writer, s Session, agentVersion string) error {
	t := atifTrajectory{SchemaVersion: ATIFVersion, SessionID: s.Meta.ID, Agent: atifAgent{Name: "meka", Version: agentVersion},
		Steps: []atifStep{}}
	var fm atifFinalMetrics
	last := -1 // the index of the agent step tool results attach to
	add := func(st atifStep, r session.Row) int {
		st.StepID = len(t.Steps) + 1
		if !r.Time.IsZero() {
			st.Timestamp = r.Time.UTC().Format(time.RFC3339Nano)
		}
		t.Steps = append(t.Steps, st)
		return len(t.Steps) - 1
	}
	for _, r := range s.Rows {
		switch e := r.Entry.(type) {
		case session.SystemPrompt:
			add(atifStep{Source: "system", Message: e.Text}, r)
			last = -1
		case session.ToolSet:
			var names []string
			for _, d := range e.Tools {
				names = append(names, d.Name)
			}
			if t.Agent.Extra == nil {
				t.Agent.Extra = map[string]any{}
			}
			t.Agent.Extra["tools"] = names
		case session.UserMessage:
			st := atifStep{Source: "user", Message: partsText(e.Parts)}
			if e.Source != session.SourceUser {
				st.Extra = map[string]any{"meka_source": e.Source}
			}
			add(st, r)
			last = -1
		case session.AssistantMessage:
			st := atifStep{Source: "agent", Message: partsText(e.Parts), ModelName: e.Model}
			var thinking []string
			for _, p := range e.Parts {
				switch p := p.(type) {
				case model.Thinking:
					if p.Text != "" {
						thinking = append(thinking, p.Text)
					}
				case model.ToolCall:
					args := p.Arguments
					if !isObject(args) {
						args = json.RawMessage("{}")
					}
					st.ToolCalls = append(st.ToolCalls, atifToolCall{ToolCallID: p.ID, FunctionName: p.Name, Arguments: args})
				}
			}
			st.ReasoningContent = strings.Join(thinking, "\n\n")
			u := e.Usage
			prompt := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
			st.Metrics = &atifMetrics{PromptTokens: prompt, CompletionTokens: u.OutputTokens, CachedTokens: u.CacheReadTokens, CostUSD: u.Cost}
			if u.CacheWriteTokens > 0 {
				st.Metrics.Extra = map[string]any{"cache_creation_input_tokens": u.CacheWriteTokens}
			}
			fm.TotalPromptTokens += prompt
			fm.TotalCompletionTokens += u.OutputTokens
			fm.TotalCachedTokens += u.CacheReadTokens
			fm.TotalCostUSD += u.Cost
			if t.Agent.ModelName == "" {
				t.Agent.ModelName = e.Model
			}
			last = add(st, r)
		case session.ToolResult:
			res := atifResult{SourceCallID: e.CallID, Content: model.Message{Parts: e.Content}.Text()}
			if e.Status != session.StatusOK {
				res.Extra = map[string]any{"status": e.Status}
			}
			if last < 0 || !hasCall(&t.Steps[last], e.CallID) {
				// A result with no call in this trajectory (an imported
				// session's): a system step, so no id dangles.
				res.SourceCallID = ""
				add(atifStep{Source: "system", Message: "", Observation: &atifObservation{Results: []atifResult{res}}}, r)
				continue
			}
			st := &t.Steps[last]
			if st.Observation == nil {
				st.Observation = &atifObservation{}
			}
			st.Observation.Results = append(st.Observation.Results, res)
		case session.Notice:
			msg := e.Title
			if e.Description != "" {
				msg += ": " + e.Description
			}
			add(atifStep{Source: "system", Message: msg, Extra: map[string]any{"notice": e.Severity}}, r)
			last = -1
		case session.Compaction:
			add(atifStep{Source: "system", Message: e.Summary,
				Extra: map[string]any{"context_management": map[string]string{"type": "compaction", "boundary": "replace"}}}, r)
			last = -1
		}
	}
	fm.TotalSteps = len(t.Steps)
	t.FinalMetrics = &fm
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(t)
}

func hasCall(st *atifStep, id string) bool {
	for _, c := range st.ToolCalls {
		if c.ToolCallID == id {
			return true
		}
	}
	return false
}

func isObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}
