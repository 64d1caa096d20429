package events

import (
	"errors"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
)

// Turn is a turn as events and the HTTP API report it: turn.completed's
// and turn.failed's payload.
type Turn struct {
	ID           string       `json:"turn_id"`
	SessionID    string       `json:"session_id"`
	Source       string       `json:"source"`
	Status       string       `json:"status"`
	StopReason   string       `json:"stop_reason,omitempty"`
	Usage        *model.Usage `json:"usage,omitempty"`
	Error        *Problem     `json:"error,omitempty"`
	StartedAt    time.Time    `json:"started_at"`
	EndedAt      *time.Time   `json:"ended_at,omitempty"`
	FirstEventID int64        `json:"first_event_id,omitempty"`
	LastEventID  int64        `json:"last_event_id,omitempty"`
}

// Problem is an RFC 9457 problem details body with a stable code: an HTTP
// error's body, and why a turn failed.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Code     string `json:"code"`
	Instance string `json:"instance,omitempty"`
	// Where says where hidden detail went (the meka log), for errors
	// whose text must not travel.
	Where string `json:"where,omitempty"`
	// ProviderError carries the provider's own text, capped, only when
	// relaying provider errors is on.
	ProviderError *ProviderError `json:"provider_error,omitempty"`
}

// ProviderError is a provider's own error text, capped.
type ProviderError struct {
	Status    int    `json:"status,omitempty"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
}

// TurnProblem says why a turn failed without leaking meka's own error
// text (paths, store errors): that goes to the log, which Where names. A
// provider's text travels only when relay is on.
func TurnProblem(err error, relay bool) Problem {
	p := Problem{Type: "/v1/problems/turn-failed", Status: 502, Code: "turn-failed", Title: "The turn failed", Where: "meka log"}
	var perr *model.Error
	if errors.As(err, &perr) {
		p.Title = "The model provider failed"
		p.Code = "provider-failed"
		if relay && perr.Body != "" {
			p.ProviderError = &ProviderError{Status: perr.Status, Text: model.Cap(perr.Body, model.DisplayCap), Truncated: len(perr.Body) > model.DisplayCap}
		}
	}
	return p
}

// End fills in how a turn ended from the engine's result; relay says
// whether a provider's error text may travel.
func (t *Turn) End(res agent.Result, now time.Time, relay bool) {
	now = now.UTC()
	t.EndedAt = &now
	t.StopReason = StopReason(res.Stop)
	t.Status = TurnStatus(res.Stop)
	u := res.Usage
	t.Usage = &u
	if res.Err != nil {
		p := TurnProblem(res.Err, relay)
		t.Error = &p
	}
}

// StatusInterrupted is the status of a turn a crash cut: the process
// running it died before it ended, and a later start recorded its end.
const StatusInterrupted = "interrupted"

// Interrupt ends t as cut by a crash, found at now.
func (t *Turn) Interrupt(now time.Time) {
	now = now.UTC()
	t.EndedAt = &now
	t.Status, t.StopReason = StatusInterrupted, StatusInterrupted
	t.Error = &Problem{Type: "/v1/problems/turn-interrupted", Status: 500, Code: "turn-interrupted",
		Title:  "meka stopped during the turn",
		Detail: "the process running the turn was killed or crashed; a tool call it left running may have partly run, and the session's log says which"}
}

// StopReason names why a turn stopped.
func StopReason(s agent.StopReason) string {
	switch s {
	case agent.StopCanceled:
		return "cancelled"
	}
	return string(s)
}

// TurnStatus is a turn's outcome: completed, cancelled or failed.
func TurnStatus(s agent.StopReason) string {
	switch s {
	case agent.StopCanceled:
		return "cancelled"
	case agent.StopFailed:
		return "failed"
	}
	return "completed"
}
