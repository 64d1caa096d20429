package acp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func sp(s string) *string { return &s }
func ip(i int) *int       { return &i }

// goldens pins the wire shape of every hand-written type: each value is
// marshalled and compared with testdata/golden/<name>.json, and the file
// decodes back to an equal value.
var goldens = map[string]any{
	"initialize_request": &InitializeRequest{ProtocolVersion: 1, ClientInfo: &Implementation{Name: "zed", Title: "Zed", Version: "0.230.0"},
		ClientCapabilities: ClientCapabilities{FS: FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true,
			Session:     &ClientSessionCapabilities{Compaction: &Empty{}, Notices: &Empty{}, ConfigOptions: &SessionConfigOptionsCapabilities{Boolean: &Empty{}}},
			Elicitation: &ElicitationCapabilities{Form: &Empty{}}, Meta: Meta{"terminal_output": true}}},
	"initialize_response": &InitializeResponse{ProtocolVersion: 1, AuthMethods: []json.RawMessage{},
		AgentCapabilities: AgentCapabilities{LoadSession: true, PromptCapabilities: PromptCapabilities{Image: true, EmbeddedContext: true},
			SessionCapabilities: SessionCapabilities{List: &Empty{}, Resume: &Empty{}, Fork: &Empty{}, Close: &Empty{}, Delete: &Empty{}, AdditionalDirectories: &Empty{}, SystemPrompt: &Empty{}}},
		AgentInfo: &Implementation{Name: "meka", Version: "v1.2.3"}},
	"new_session_request": &NewSessionRequest{Cwd: "/home/u/p", AdditionalDirectories: []string{"/home/u/lib"}, McpServers: []json.RawMessage{json.RawMessage(`{"name":"x","command":"x","args":[],"env":[]}`)},
		SystemPrompt: &SystemPrompt{Mode: "append", Content: []ContentBlock{TextBlock("Answer in French.")}}},
	"new_session_response": &NewSessionResponse{SessionID: "s1",
		Modes: &SessionModeState{CurrentModeID: "workspace", AvailableModes: []SessionMode{{ID: "read", Name: "Read"}, {ID: "workspace", Name: "Workspace", Description: "Edit files."}}},
		ConfigOptions: []SessionConfigOption{
			{ID: "permission", Name: "Permission", Category: "mode", Type: "select", CurrentValue: "workspace", Options: []SessionConfigSelectOption{{Value: "read", Name: "Read"}, {Value: "workspace", Name: "Workspace"}}},
			{ID: "approvals", Name: "Approvals", Type: "boolean", CurrentValue: true},
		}},
	"load_session_request":  &LoadSessionRequest{SessionID: "s1", Cwd: "/home/u/p", McpServers: []json.RawMessage{}, Meta: Meta{"k": "v"}},
	"load_session_response": &LoadSessionResponse{Modes: &SessionModeState{CurrentModeID: "read", AvailableModes: []SessionMode{{ID: "read", Name: "Read"}}}},
	"list_sessions_request": &ListSessionsRequest{Cwd: sp("/home/u/p"), Cursor: sp("opaque")},
	"list_sessions_response": &ListSessionsResponse{NextCursor: sp("next"), Sessions: []SessionInfo{
		{SessionID: "s1", Cwd: "/home/u/p", AdditionalDirectories: []string{"/home/u/lib"}, Title: sp("fix the build"), UpdatedAt: sp("2026-11-30T12:00:00Z")}}},
	"session_id_request":                &SessionIDRequest{SessionID: "s1"},
	"set_session_mode_request":          &SetSessionModeRequest{SessionID: "s1", ModeID: "read"},
	"set_config_option_request_value":   &SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "profile", Value: json.RawMessage(`"fast"`)},
	"set_config_option_request_boolean": &SetSessionConfigOptionRequest{SessionID: "s1", ConfigID: "approvals", Type: "boolean", Value: json.RawMessage(`false`)},
	"set_config_option_response":        &SetSessionConfigOptionResponse{ConfigOptions: []SessionConfigOption{{ID: "approvals", Name: "Approvals", Type: "select", CurrentValue: "on", Options: []SessionConfigSelectOption{{Value: "on", Name: "On"}}}}},
	"prompt_request": &PromptRequest{SessionID: "s1", Prompt: []ContentBlock{
		TextBlock("look at "),
		{Type: "resource_link", URI: "file:///home/u/p/a.go", Name: "a.go", MimeType: "text/x-go", Size: func() *int64 { n := int64(12); return &n }()},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///home/u/p/b.go", Text: sp("package b\n")}},
		{Type: "resource", Resource: &EmbeddedResource{URI: "file:///home/u/p/c.bin", Blob: sp("AAEC"), MimeType: "application/octet-stream"}},
		{Type: "image", MimeType: "image/png", Data: "iVBORw0KGgo="},
		TextBlock(""),
	}},
	"prompt_response":            &PromptResponse{StopReason: "end_turn", Usage: &Usage{TotalTokens: 17, InputTokens: 10, OutputTokens: 5, CachedReadTokens: ip(2), CachedWriteTokens: ip(0)}},
	"update_agent_message_chunk": &SessionNotification{SessionID: "s1", Update: ContentChunk{Tag: TagAgentMessage, Content: TextBlock("Hello"), MessageID: "msg_1a2b3c4d_1"}},
	"update_user_message_chunk":  &SessionNotification{SessionID: "s1", Update: ContentChunk{Tag: TagUserMessage, Content: ContentBlock{Type: "resource_link", URI: "file:///a", Name: "a"}}},
	"update_agent_thought_chunk": &SessionNotification{SessionID: "s1", Update: ContentChunk{Tag: TagAgentThought, Content: TextBlock("hmm")}},
	"update_tool_call": &SessionNotification{SessionID: "s1", Update: ToolCall{ToolCallID: "call_6", Title: "echo hi", Name: "shell_execute", Kind: "execute", Status: "in_progress",
		Content:   []ToolCallContent{{Type: "terminal", TerminalID: "call_6"}},
		Locations: []ToolCallLocation{{Path: "/home/u/p/a.go", Line: ip(3)}}, RawInput: json.RawMessage(`{"command":"echo hi"}`),
		Meta: Meta{"terminal_info": map[string]any{"terminal_id": "call_6", "cwd": "/home/u/p"}}}},
	"update_tool_call_update": &SessionNotification{SessionID: "s1", Update: ToolCallUpdate{ToolCallID: "call_7", Status: "completed", Title: sp("file_edit a.go"),
		Content: []ToolCallContent{
			{Type: "diff", Path: "/home/u/p/a.go", OldText: sp("a\n"), NewText: sp("b\n")},
			{Type: "diff", Path: "/home/u/p/new.go", NewText: sp("package x\n")},
			{Type: "content", Content: ptr(TextBlock("```console\nok\n```"))},
		},
		RawOutput: json.RawMessage(`{"status":"ok"}`),
		Meta:      Meta{"terminal_exit": map[string]any{"terminal_id": "call_7", "exit_code": float64(0), "signal": nil}}}},
	"update_plan":                      &SessionNotification{SessionID: "s1", Update: PlanUpdate{Entries: []PlanEntry{{Content: "Write tests", Priority: "medium", Status: "in_progress"}}}},
	"update_plan_empty":                &SessionNotification{SessionID: "s1", Update: PlanUpdate{Entries: []PlanEntry{}}},
	"update_available_commands_update": &SessionNotification{SessionID: "s1", Update: AvailableCommandsUpdate{AvailableCommands: []AvailableCommand{{Name: "status", Description: "Show status"}, {Name: "review", Description: "A skill", Input: &AvailableCommandInput{Hint: "additional context (optional)"}}}}},
	"update_current_mode_update":       &SessionNotification{SessionID: "s1", Update: CurrentModeUpdate{CurrentModeID: "read"}},
	"update_config_option_update":      &SessionNotification{SessionID: "s1", Update: ConfigOptionUpdate{ConfigOptions: []SessionConfigOption{{ID: "approvals", Name: "Approvals", Type: "boolean", CurrentValue: false}}}},
	"update_session_info_update":       &SessionNotification{SessionID: "s1", Update: SessionInfoUpdate{Title: sp("fix the build")}},
	"update_usage_update":              &SessionNotification{SessionID: "s1", Update: UsageUpdate{Used: 1200, Size: 200000, Cost: &Cost{Amount: 0.0125, Currency: "USD"}}},
	"update_notice":                    &SessionNotification{SessionID: "s1", Update: NoticeUpdate{Severity: "info", Title: "Background task 7f3a1c22 finished after 12m 4s", Description: "npm test", Meta: Meta{"background": map[string]any{"tasks": []any{}}}}},
	"update_compaction_update":         &SessionNotification{SessionID: "s1", Update: CompactionUpdate{CompactionID: "compaction-1", Status: "completed", Summary: []ContentBlock{TextBlock("The user asked...")}, Meta: Meta{"compaction": map[string]any{"trigger": "auto"}}}},
	"update_raw":                       &SessionNotification{SessionID: "s1", Update: RawUpdate{Tag: "session_message_chunk", JSON: json.RawMessage(`{"sessionUpdate":"session_message_chunk","messageId":"m1","content":{"type":"text","text":"x"}}`)}},
	"update_plan_op":                   &SessionNotification{SessionID: "s1", Update: PlanOpUpdate{Plan: PlanContent{Type: "items", PlanID: "checklist", Entries: []PlanEntry{{Content: "Write the tests", Priority: "medium", Status: "in_progress"}}}}},
	"update_plan_removed":              &SessionNotification{SessionID: "s1", Update: PlanRemovedUpdate{PlanID: "checklist"}},
	"update_subagent_update":           &SessionNotification{SessionID: "s1", Update: SubagentUpdate{SessionID: "s2", Title: sp("Writer"), State: &SubagentState{State: "idle", StopReason: "end_turn"}, Meta: Meta{"toolCallId": "sp"}}},
	"delete_session_request":           &SessionIDRequest{SessionID: "s1"},
	"request_permission_request": &RequestPermissionRequest{SessionID: "s1", ToolCall: ToolCallUpdate{ToolCallID: "c1", Title: sp("file_write a.txt"), Kind: "edit", Status: "pending", RawInput: json.RawMessage(`{"path":"a.txt"}`)},
		Options: []PermissionOption{{OptionID: "allow", Name: "Allow", Kind: "allow_once"}, {OptionID: "reject_always", Name: "Always deny any file_write", Kind: "reject_always"}}},
	"request_permission_response_selected":  &RequestPermissionResponse{Outcome: PermissionOutcome{Outcome: "selected", OptionID: "allow"}},
	"request_permission_response_cancelled": &RequestPermissionResponse{Outcome: PermissionOutcome{Outcome: "cancelled"}},
	"read_text_file_request":                &ReadTextFileRequest{SessionID: "s1", Path: "/home/u/p/a.go", Line: ip(10), Limit: ip(20)},
	"read_text_file_response":               &ReadTextFileResponse{Content: "package a\n"},
	"write_text_file_request":               &WriteTextFileRequest{SessionID: "s1", Path: "/home/u/p/a.go", Content: ""},
}

func TestGolden(t *testing.T) {
	for name, v := range goldens {
		t.Run(name, func(t *testing.T) {
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("wire shape changed:\n got %s\nwant %s", got, want)
			}
			back := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if err := json.Unmarshal(want, back); err != nil {
				t.Fatal(err)
			}
			again, err := json.MarshalIndent(back, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(append(again, '\n'), want) {
				t.Fatalf("does not round-trip:\n got %s\nwant %s", again, want)
			}
		})
	}
}
