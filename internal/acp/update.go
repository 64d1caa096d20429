package acp

import (
	"encoding/json"
	"fmt"
)

// SessionUpdate is one session/update payload. The variants are the
// structs below, each marshalled with its "sessionUpdate" tag; RawUpdate
// carries a variant meka does not model.
type SessionUpdate interface{ updateTag() string }

// ContentChunk is a user_message_chunk, agent_message_chunk or
// agent_thought_chunk; Tag says which.
type ContentChunk struct {
	Tag       string       `json:"-"`
	Content   ContentBlock `json:"content"`
	MessageID string       `json:"messageId,omitempty"`
	Meta      Meta         `json:"_meta,omitempty"`
}

// Chunk tags.
const (
	TagUserMessage  = "user_message_chunk"
	TagAgentMessage = "agent_message_chunk"
	TagAgentThought = "agent_thought_chunk"
)

// ToolCall announces a tool call.
type ToolCall struct {
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title"`
	Name       string             `json:"name,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Status     string             `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Meta       Meta               `json:"_meta,omitempty"`
}

// ToolCallUpdate changes the fields it sets of a tool call; Content
// replaces the call's content.
type ToolCallUpdate struct {
	ToolCallID string             `json:"toolCallId"`
	Title      *string            `json:"title,omitempty"`
	Kind       string             `json:"kind,omitempty"`
	Status     string             `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitempty"`
	Locations  []ToolCallLocation `json:"locations,omitempty"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Meta       Meta               `json:"_meta,omitempty"`
}

// PlanUpdate is the whole plan.
type PlanUpdate struct {
	Entries []PlanEntry `json:"entries"`
	Meta    Meta        `json:"_meta,omitempty"`
}

// PlanOpUpdate is a plan_update: one plan, by id, whole, for a client
// that renders plan operations.
type PlanOpUpdate struct {
	Plan PlanContent `json:"plan"`
	Meta Meta        `json:"_meta,omitempty"`
}

// PlanContent is an item-based plan.
type PlanContent struct {
	Type    string      `json:"type"`
	PlanID  string      `json:"planId"`
	Entries []PlanEntry `json:"entries"`
	Meta    Meta        `json:"_meta,omitempty"`
}

// PlanRemovedUpdate says a plan is gone.
type PlanRemovedUpdate struct {
	PlanID string `json:"planId"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// SubagentUpdate announces a child session the session owns, or changes
// what is said of it; sent on the parent.
type SubagentUpdate struct {
	SessionID   string         `json:"sessionId"`
	Title       *string        `json:"title,omitempty"`
	Description *string        `json:"description,omitempty"`
	State       *SubagentState `json:"state,omitempty"`
	Cwd         *string        `json:"cwd,omitempty"`
	Meta        Meta           `json:"_meta,omitempty"`
}

// SubagentState is a child's foreground state: running or idle.
type SubagentState struct {
	State      string `json:"state"`
	StopReason string `json:"stopReason,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// AvailableCommandsUpdate is the whole slash-command palette.
type AvailableCommandsUpdate struct {
	AvailableCommands []AvailableCommand `json:"availableCommands"`
	Meta              Meta               `json:"_meta,omitempty"`
}

// CurrentModeUpdate says the session's mode changed.
type CurrentModeUpdate struct {
	CurrentModeID string `json:"currentModeId"`
	Meta          Meta   `json:"_meta,omitempty"`
}

// ConfigOptionUpdate is every config option with its value.
type ConfigOptionUpdate struct {
	ConfigOptions []SessionConfigOption `json:"configOptions"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// SessionInfoUpdate carries the session's title.
type SessionInfoUpdate struct {
	Title     *string `json:"title,omitempty"`
	UpdatedAt *string `json:"updatedAt,omitempty"`
	Meta      Meta    `json:"_meta,omitempty"`
}

// UsageUpdate says how full the context window is.
type UsageUpdate struct {
	Used int   `json:"used"`
	Size int   `json:"size"`
	Cost *Cost `json:"cost,omitempty"`
	Meta Meta  `json:"_meta,omitempty"`
}

// Cost is what the session has spent so far.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
	Meta     Meta    `json:"_meta,omitempty"`
}

// NoticeUpdate is an advisory shown outside the transcript.
type NoticeUpdate struct {
	Severity    string `json:"severity"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"_meta,omitempty"`
}

// CompactionUpdate reports a compaction's progress.
type CompactionUpdate struct {
	CompactionID string         `json:"compactionId"`
	Status       string         `json:"status"`
	Summary      []ContentBlock `json:"summary,omitempty"`
	Error        string         `json:"error,omitempty"`
	Meta         Meta           `json:"_meta,omitempty"`
}

// RawUpdate is a variant meka does not model, kept verbatim (its JSON
// includes the sessionUpdate tag).
type RawUpdate struct {
	Tag  string
	JSON json.RawMessage
}

func (c ContentChunk) updateTag() string          { return c.Tag }
func (ToolCall) updateTag() string                { return "tool_call" }
func (ToolCallUpdate) updateTag() string          { return "tool_call_update" }
func (PlanUpdate) updateTag() string              { return "plan" }
func (PlanOpUpdate) updateTag() string            { return "plan_update" }
func (PlanRemovedUpdate) updateTag() string       { return "plan_removed" }
func (SubagentUpdate) updateTag() string          { return "subagent_update" }
func (AvailableCommandsUpdate) updateTag() string { return "available_commands_update" }
func (CurrentModeUpdate) updateTag() string       { return "current_mode_update" }
func (ConfigOptionUpdate) updateTag() string      { return "config_option_update" }
func (SessionInfoUpdate) updateTag() string       { return "session_info_update" }
func (UsageUpdate) updateTag() string             { return "usage_update" }
func (NoticeUpdate) updateTag() string            { return "notice" }
func (CompactionUpdate) updateTag() string        { return "compaction_update" }
func (r RawUpdate) updateTag() string             { return r.Tag }

// MarshalUpdate encodes u with its sessionUpdate tag first.
func MarshalUpdate(u SessionUpdate) ([]byte, error) {
	if r, ok := u.(RawUpdate); ok {
		return r.JSON, nil
	}
	body, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	tag, _ := json.Marshal(u.updateTag())
	if string(body) == "{}" {
		return []byte(`{"sessionUpdate":` + string(tag) + `}`), nil
	}
	return append([]byte(`{"sessionUpdate":`+string(tag)+`,`), body[1:]...), nil
}

// UnmarshalUpdate decodes a session/update payload; a tag meka does not
// model comes back as a RawUpdate.
func UnmarshalUpdate(b []byte) (SessionUpdate, error) {
	var head struct {
		Tag string `json:"sessionUpdate"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode session update: %w", err)
	}
	var u SessionUpdate
	var err error
	switch head.Tag {
	case TagUserMessage, TagAgentMessage, TagAgentThought:
		var v ContentChunk
		err, v.Tag = json.Unmarshal(b, &v), head.Tag
		u = v
	case "tool_call":
		u, err = decodeAs[ToolCall](b)
	case "tool_call_update":
		u, err = decodeAs[ToolCallUpdate](b)
	case "plan":
		u, err = decodeAs[PlanUpdate](b)
	case "plan_update":
		u, err = decodeAs[PlanOpUpdate](b)
	case "plan_removed":
		u, err = decodeAs[PlanRemovedUpdate](b)
	case "subagent_update":
		u, err = decodeAs[SubagentUpdate](b)
	case "available_commands_update":
		u, err = decodeAs[AvailableCommandsUpdate](b)
	case "current_mode_update":
		u, err = decodeAs[CurrentModeUpdate](b)
	case "config_option_update":
		u, err = decodeAs[ConfigOptionUpdate](b)
	case "session_info_update":
		u, err = decodeAs[SessionInfoUpdate](b)
	case "usage_update":
		u, err = decodeAs[UsageUpdate](b)
	case "notice":
		u, err = decodeAs[NoticeUpdate](b)
	case "compaction_update":
		u, err = decodeAs[CompactionUpdate](b)
	case "":
		return nil, fmt.Errorf("decode session update: no sessionUpdate tag")
	default:
		return RawUpdate{Tag: head.Tag, JSON: append(json.RawMessage(nil), b...)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decode %s update: %w", head.Tag, err)
	}
	return u, nil
}

func decodeAs[T SessionUpdate](b []byte) (SessionUpdate, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// MarshalJSON writes the notification with its update tagged. It is
// written by hand: a replay sends thousands, and each pass of
// encoding/json over the update would be paid again.
func (n SessionNotification) MarshalJSON() ([]byte, error) {
	u, err := MarshalUpdate(n.Update)
	if err != nil {
		return nil, err
	}
	id, err := json.Marshal(n.SessionID)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(u)+len(id)+32)
	b = append(b, `{"sessionId":`...)
	b = append(b, id...)
	b = append(b, `,"update":`...)
	b = append(b, u...)
	if len(n.Meta) > 0 {
		m, err := json.Marshal(n.Meta)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"_meta":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a notification and its tagged update.
func (n *SessionNotification) UnmarshalJSON(b []byte) error {
	var w struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
		Meta      Meta            `json:"_meta,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	u, err := UnmarshalUpdate(w.Update)
	if err != nil {
		return err
	}
	*n = SessionNotification{SessionID: w.SessionID, Update: u, Meta: w.Meta}
	return nil
}
