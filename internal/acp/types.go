package acp

import (
	"encoding/json"
)

// This file holds the hand-written wire types of the ACP messages meka
// reads and writes. Field names follow the schema (camelCase); every type
// carries _meta. Opaque payloads (rawInput, rawOutput) stay raw JSON.

// Meta is a message's _meta: extension data, never interpreted unless a
// key is named here.
type Meta map[string]any

// ProtocolVersion is the ACP version meka speaks.
const ProtocolVersion = 1

// Implementation names a client or an agent.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
	Meta    Meta   `json:"_meta,omitempty"`
}

// InitializeRequest opens a connection.
type InitializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
	Meta               Meta               `json:"_meta,omitempty"`
}

// ClientCapabilities are what the client implements.
type ClientCapabilities struct {
	FS          FileSystemCapabilities     `json:"fs"`
	Terminal    bool                       `json:"terminal,omitempty"`
	Session     *ClientSessionCapabilities `json:"session,omitempty"`
	Elicitation *ElicitationCapabilities   `json:"elicitation,omitempty"`
	// Subagents: the client shows a sub-agent as a child session of its
	// own (subagent_update); Plan: it renders plan_update/plan_removed.
	Subagents *Empty `json:"subagents,omitempty"`
	Plan      *Empty `json:"plan,omitempty"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// FileSystemCapabilities say which fs/* requests the client serves.
type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
	Meta          Meta `json:"_meta,omitempty"`
}

// ClientSessionCapabilities are the session features the client renders.
type ClientSessionCapabilities struct {
	Compaction    *Empty                            `json:"compaction,omitempty"`
	Notices       *Empty                            `json:"notices,omitempty"`
	ConfigOptions *SessionConfigOptionsCapabilities `json:"configOptions,omitempty"`
	Meta          Meta                              `json:"_meta,omitempty"`
}

// SessionConfigOptionsCapabilities say which option types the client
// renders beyond select.
type SessionConfigOptionsCapabilities struct {
	Boolean *Empty `json:"boolean,omitempty"`
	Meta    Meta   `json:"_meta,omitempty"`
}

// ElicitationCapabilities say which elicitation modes the client renders.
type ElicitationCapabilities struct {
	Form *Empty `json:"form,omitempty"`
	URL  *Empty `json:"url,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// Empty is a capability object with nothing but _meta: present means
// supported.
type Empty struct {
	Meta Meta `json:"_meta,omitempty"`
}

// InitializeResponse answers initialize.
type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []json.RawMessage `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
	Meta              Meta              `json:"_meta,omitempty"`
}

// AgentCapabilities are what meka implements.
type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  PromptCapabilities  `json:"promptCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
	Meta                Meta                `json:"_meta,omitempty"`
}

// PromptCapabilities say which content blocks a prompt may carry.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
	Meta            Meta `json:"_meta,omitempty"`
}

// SessionCapabilities say which session methods meka serves.
type SessionCapabilities struct {
	List                  *Empty `json:"list,omitempty"`
	Resume                *Empty `json:"resume,omitempty"`
	Fork                  *Empty `json:"fork,omitempty"`
	Close                 *Empty `json:"close,omitempty"`
	Delete                *Empty `json:"delete,omitempty"`
	AdditionalDirectories *Empty `json:"additionalDirectories,omitempty"`
	// SystemPrompt {} is the append mode alone.
	SystemPrompt *Empty `json:"systemPrompt,omitempty"`
	Meta         Meta   `json:"_meta,omitempty"`
}

// SystemPrompt is a client's system-level instructions for a session.
type SystemPrompt struct {
	Mode    string         `json:"mode"`
	Content []ContentBlock `json:"content"`
	Meta    Meta           `json:"_meta,omitempty"`
}

// NewSessionRequest is session/new.
type NewSessionRequest struct {
	Cwd                   string            `json:"cwd"`
	AdditionalDirectories []string          `json:"additionalDirectories,omitempty"`
	McpServers            []json.RawMessage `json:"mcpServers"`
	SystemPrompt          *SystemPrompt     `json:"systemPrompt,omitempty"`
	Meta                  Meta              `json:"_meta,omitempty"`
}

// NewSessionResponse answers session/new.
type NewSessionResponse struct {
	SessionID     string                `json:"sessionId"`
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// LoadSessionRequest is session/load, and session/resume and session/fork
// have the same shape.
type LoadSessionRequest struct {
	SessionID             string            `json:"sessionId"`
	Cwd                   string            `json:"cwd"`
	AdditionalDirectories []string          `json:"additionalDirectories,omitempty"`
	McpServers            []json.RawMessage `json:"mcpServers,omitempty"`
	SystemPrompt          *SystemPrompt     `json:"systemPrompt,omitempty"`
	Meta                  Meta              `json:"_meta,omitempty"`
}

// LoadSessionResponse answers session/load and session/resume.
type LoadSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// ListSessionsRequest is session/list.
type ListSessionsRequest struct {
	Cwd    *string `json:"cwd,omitempty"`
	Cursor *string `json:"cursor,omitempty"`
	Meta   Meta    `json:"_meta,omitempty"`
}

// ListSessionsResponse answers session/list.
type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor *string       `json:"nextCursor,omitempty"`
	Meta       Meta          `json:"_meta,omitempty"`
}

// SessionInfo is one session of a listing.
type SessionInfo struct {
	SessionID             string   `json:"sessionId"`
	Cwd                   string   `json:"cwd"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	Title                 *string  `json:"title,omitempty"`
	UpdatedAt             *string  `json:"updatedAt,omitempty"`
	Meta                  Meta     `json:"_meta,omitempty"`
}

// SessionIDRequest is any request naming only a session: session/close,
// session/cancel.
type SessionIDRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// SetSessionModeRequest is session/set_mode.
type SetSessionModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// SetSessionConfigOptionRequest is session/set_config_option. Value is a
// value id (a JSON string), or a boolean when Type is "boolean".
type SetSessionConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// SetSessionConfigOptionResponse answers with every option.
type SetSessionConfigOptionResponse struct {
	ConfigOptions []SessionConfigOption `json:"configOptions"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

// SessionModeState is the mode picker.
type SessionModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
	Meta           Meta          `json:"_meta,omitempty"`
}

// SessionMode is one mode of the picker.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"_meta,omitempty"`
}

// SessionConfigOption is a select (Options, string CurrentValue) or a
// boolean (bool CurrentValue) option.
type SessionConfigOption struct {
	ID           string                      `json:"id"`
	Name         string                      `json:"name"`
	Description  string                      `json:"description,omitempty"`
	Category     string                      `json:"category,omitempty"`
	Type         string                      `json:"type"`
	CurrentValue any                         `json:"currentValue"`
	Options      []SessionConfigSelectOption `json:"options,omitempty"`
	Meta         Meta                        `json:"_meta,omitempty"`
}

// SessionConfigSelectOption is one value of a select.
type SessionConfigSelectOption struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Meta        Meta   `json:"_meta,omitempty"`
}

// PromptRequest is session/prompt.
type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
	Meta      Meta           `json:"_meta,omitempty"`
}

// PromptResponse answers session/prompt.
type PromptResponse struct {
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage,omitempty"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// Usage is what a turn spent.
type Usage struct {
	TotalTokens       int  `json:"totalTokens"`
	InputTokens       int  `json:"inputTokens"`
	OutputTokens      int  `json:"outputTokens"`
	CachedReadTokens  *int `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *int `json:"cachedWriteTokens,omitempty"`
	Meta              Meta `json:"_meta,omitempty"`
}

// ContentBlock is a text, image, audio, resource_link or resource block;
// Type says which fields apply.
type ContentBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// image, audio
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// image (optional), resource_link
	URI string `json:"uri,omitempty"`
	// resource_link
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// resource
	Resource    *EmbeddedResource `json:"resource,omitempty"`
	Annotations json.RawMessage   `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// EmbeddedResource is a resource block's contents: Text or Blob.
type EmbeddedResource struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
	Meta     Meta    `json:"_meta,omitempty"`
}

// MarshalJSON writes the fields a block's type has, so that a text block
// with empty text still carries "text".
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	type plain ContentBlock
	switch b.Type {
	case "text":
		return json.Marshal(struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			Annotations json.RawMessage `json:"annotations,omitempty"`
			Meta        Meta            `json:"_meta,omitempty"`
		}{b.Type, b.Text, b.Annotations, b.Meta})
	case "image", "audio":
		return json.Marshal(struct {
			Type        string          `json:"type"`
			Data        string          `json:"data"`
			MimeType    string          `json:"mimeType"`
			URI         string          `json:"uri,omitempty"`
			Annotations json.RawMessage `json:"annotations,omitempty"`
			Meta        Meta            `json:"_meta,omitempty"`
		}{b.Type, b.Data, b.MimeType, b.URI, b.Annotations, b.Meta})
	}
	return json.Marshal(plain(b))
}

// TextBlock returns a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// ToolCallContent is produced content ("content"), a diff ("diff") or a
// terminal ("terminal").
type ToolCallContent struct {
	Type string `json:"type"`
	// content
	Content *ContentBlock `json:"content,omitempty"`
	// diff
	Path    string  `json:"path,omitempty"`
	OldText *string `json:"oldText,omitempty"`
	NewText *string `json:"newText,omitempty"`
	// terminal
	TerminalID string `json:"terminalId,omitempty"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// ToolCallLocation is a file a tool call touches.
type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
	Meta Meta   `json:"_meta,omitempty"`
}

// PlanEntry is one entry of a plan update.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// AvailableCommand is one slash command of the palette.
type AvailableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *AvailableCommandInput `json:"input,omitempty"`
	Meta        Meta                   `json:"_meta,omitempty"`
}

// AvailableCommandInput is a command's free-form input hint.
type AvailableCommandInput struct {
	Hint string `json:"hint"`
	Meta Meta   `json:"_meta,omitempty"`
}

// SessionNotification is session/update's params.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
	Meta      Meta          `json:"_meta,omitempty"`
}

// RequestPermissionRequest is session/request_permission.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
	Meta      Meta               `json:"_meta,omitempty"`
}

// PermissionOption is one answer a permission prompt offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// RequestPermissionResponse is the client's answer.
type RequestPermissionResponse struct {
	Outcome PermissionOutcome `json:"outcome"`
	Meta    Meta              `json:"_meta,omitempty"`
}

// PermissionOutcome is "selected" with an OptionID, or "cancelled".
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// ReadTextFileRequest is fs/read_text_file.
type ReadTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// ReadTextFileResponse is the client's file content.
type ReadTextFileResponse struct {
	Content string `json:"content"`
	Meta    Meta   `json:"_meta,omitempty"`
}

// WriteTextFileRequest is fs/write_text_file.
type WriteTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Meta      Meta   `json:"_meta,omitempty"`
}
