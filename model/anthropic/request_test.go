package anthropic_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
)

var png = []byte("\x89PNG\r\n\x1a\nfake")

// conversation has every part kind in the places they occur.
func conversation(vision bool) *model.Request {
	return &model.Request{
		System: "You are meka.",
		Tools: []model.ToolSpec{{
			Name:        "file_read",
			Description: "Read a file.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`),
		}},
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: model.Parts{
				model.Text{Text: "Explain"},
				model.Resource{URI: "file:///w/a.go", Text: "package a"},
				model.Resource{URI: "https://go.dev/ref/spec", Name: "spec"},
				model.Image{MediaType: "image/png", Data: png, Name: "shot.png"},
			}},
			{Role: model.RoleAssistant, Parts: model.Parts{
				model.Thinking{Text: "claude thoughts", Signature: "sig-1", Provider: "anthropic"},
				model.Thinking{Redacted: "opaque-data", Provider: "anthropic"},
				model.Thinking{Text: "gpt thoughts", Provider: "openai"},
				model.Text{Text: "Reading both."},
				model.ToolCall{ID: "toolu_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				model.ToolCall{ID: "toolu_2", Name: "file_read"},
			}},
			{Role: model.RoleTool, Parts: model.Parts{
				model.ToolResult{CallID: "toolu_1", Name: "file_read", Content: model.Parts{model.Text{Text: "package a"}}},
				model.ToolResult{CallID: "toolu_2", Name: "file_read", IsError: true, Content: model.Parts{
					model.Text{Text: "no such file"},
					model.Image{MediaType: "image/png", Data: png},
				}},
			}},
			// A user message after tool results joins their turn.
			{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "Keep going."}}},
		},
		Vision: vision,
	}
}

func TestRequestBody(t *testing.T) {
	for _, tc := range []struct {
		name   string
		vision bool
	}{{"request_vision.golden.json", true}, {"request_novision.golden.json", false}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
			mustRun(t, client(srv, false), conversation(tc.vision))
			sent := srv.Requests()[0].Body
			golden(t, tc.name, indent(t, sent))

			if strings.Contains(string(sent), "gpt thoughts") {
				t.Error("openai thinking was sent to anthropic")
			}
			n := strings.Count(string(sent), `"type":"base64"`)
			if tc.vision && n != 2 {
				t.Errorf("%d images sent natively, want 2 (prompt and tool result)", n)
			}
			if !tc.vision && (n != 0 || !strings.Contains(string(sent), "image shot.png was omitted")) {
				t.Errorf("images were not replaced by placeholders")
			}
		})
	}
}

type block struct {
	Type         string
	Text         string
	Thinking     string
	Signature    string
	Data         string
	ID           string
	Name         string
	Input        json.RawMessage
	ToolUseID    string `json:"tool_use_id"`
	IsError      bool   `json:"is_error"`
	Content      []block
	CacheControl *struct{ Type string } `json:"cache_control"`
}

type sentRequest struct {
	Model    string
	System   []block
	Messages []struct {
		Role    string
		Content []block
	}
	Tools []struct {
		Name         string
		Description  string
		InputSchema  map[string]any         `json:"input_schema"`
		CacheControl *struct{ Type string } `json:"cache_control"`
	}
}

func sent(t *testing.T, srv *modeltest.Server, n int) sentRequest {
	t.Helper()
	var r sentRequest
	if err := json.Unmarshal(srv.Requests()[n].Body, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRequestWireShape(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	mustRun(t, client(srv, false), conversation(false))
	r := sent(t, srv, 0)
	if r.Model != "claude-test" || len(r.System) != 1 || r.System[0].Text != "You are meka." || r.System[0].CacheControl == nil {
		t.Errorf("model %q, system %+v: want the prompt marked for caching", r.Model, r.System)
	}
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,user" {
		t.Fatalf("roles = %s", got)
	}
	user := r.Messages[0].Content
	if len(user) != 4 || user[1].Text != `<resource uri="file:///w/a.go">package a</resource>` ||
		user[2].Text != `<resource_link name="spec" uri="https://go.dev/ref/spec"></resource_link>` {
		t.Errorf("user blocks = %+v", user)
	}
	a := r.Messages[1].Content
	types := []string{}
	for _, b := range a {
		types = append(types, b.Type)
	}
	if got := strings.Join(types, ","); got != "thinking,redacted_thinking,text,tool_use,tool_use" {
		t.Fatalf("assistant blocks = %s", got)
	}
	if a[0].Thinking != "claude thoughts" || a[0].Signature != "sig-1" || a[1].Data != "opaque-data" {
		t.Errorf("thinking replayed as %+v, %+v", a[0], a[1])
	}
	if string(a[3].Input) != `{"path":"a.go"}` || string(a[4].Input) != `{}` || a[3].ID != "toolu_1" {
		t.Errorf("tool_use blocks = %+v, %+v", a[3], a[4])
	}
	results := r.Messages[2].Content
	if len(results) != 3 || results[0].Type != "tool_result" || results[0].ToolUseID != "toolu_1" ||
		results[0].Content[0].Text != "package a" || results[0].IsError {
		t.Errorf("first result = %+v", results[0])
	}
	if !results[1].IsError || results[1].ToolUseID != "toolu_2" || len(results[1].Content) != 2 {
		t.Errorf("failed result = %+v", results[1])
	}
	last := results[2]
	if last.Type != "text" || last.Text != "Keep going." || last.CacheControl == nil {
		t.Errorf("last block = %+v, want the user's words marked for caching", last)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "file_read" || r.Tools[0].Description != "Read a file." {
		t.Fatalf("tools = %+v", r.Tools)
	}
	wantSchema := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"path": map[string]any{"type": "string"}},
		"required":             []any{"path"},
		"additionalProperties": false,
	}
	if !reflect.DeepEqual(r.Tools[0].InputSchema, wantSchema) {
		t.Errorf("input_schema = %v", r.Tools[0].InputSchema)
	}
}

func TestThinkingRoundTrip(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[
		{"thinking":"The user wants a file.","signature":"EqQBCkYIBxgC","redacted_thinking":"cmVkYWN0ZWQ=","text":"Reading.",
		 "tool_calls":[{"id":"toolu_1","name":"file_read","arguments":{"path":"a.go"}}]},
		{"text":"Done."}]}`))
	c := client(srv, false)
	resp, events := mustRun(t, c, hello())
	wantParts := model.Parts{
		model.Thinking{Text: "The user wants a file.", Signature: "EqQBCkYIBxgC", Provider: "anthropic"},
		model.Thinking{Redacted: "cmVkYWN0ZWQ=", Provider: "anthropic"},
		model.Text{Text: "Reading."},
		model.ToolCall{ID: "toolu_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
	}
	if !reflect.DeepEqual(resp.Message.Parts, wantParts) {
		t.Fatalf("parts = %#v\nwant %#v", resp.Message.Parts, wantParts)
	}
	var thought strings.Builder
	for _, ev := range events {
		if d, ok := ev.(model.ThinkingDelta); ok {
			thought.WriteString(d.Text)
		}
	}
	if thought.String() != "The user wants a file." {
		t.Errorf("thinking deltas = %q", thought.String())
	}

	next := hello()
	next.Messages = append(next.Messages, resp.Message, model.Message{Role: model.RoleTool, Parts: model.Parts{
		model.ToolResult{CallID: "toolu_1", Name: "file_read", Content: model.Parts{model.Text{Text: "package a"}}},
	}})
	mustRun(t, c, next)
	a := sent(t, srv, 1).Messages[1].Content
	if a[0].Type != "thinking" || a[0].Thinking != "The user wants a file." || a[0].Signature != "EqQBCkYIBxgC" {
		t.Errorf("thinking replayed as %+v", a[0])
	}
	if a[1].Type != "redacted_thinking" || a[1].Data != "cmVkYWN0ZWQ=" {
		t.Errorf("redacted thinking replayed as %+v", a[1])
	}
}

func TestThinkingWithoutSignatureDropped(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.Messages = append(req.Messages,
		model.Message{Role: model.RoleAssistant, Parts: model.Parts{
			model.Thinking{Text: "unsigned", Provider: "anthropic"},
			model.Thinking{Text: "from elsewhere", Signature: "x", Provider: "script"},
		}},
		model.Message{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "again"}}})
	mustRun(t, client(srv, false), req)
	r := sent(t, srv, 0)
	// The assistant message had nothing to send: the user turns merge.
	if len(r.Messages) != 1 || len(r.Messages[0].Content) != 2 {
		t.Errorf("messages = %+v", r.Messages)
	}
	if strings.Contains(string(srv.Requests()[0].Body), "unsigned") {
		t.Error("unsigned thinking was sent")
	}
}

func TestNoSystemCachesTools(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.Tools = []model.ToolSpec{{Name: "a"}, {Name: "b"}}
	mustRun(t, client(srv, false), req)
	r := sent(t, srv, 0)
	if r.Tools[0].CacheControl != nil || r.Tools[1].CacheControl == nil {
		t.Errorf("tools = %+v, want the last one marked for caching", r.Tools)
	}
	if got := r.Tools[0].InputSchema; !reflect.DeepEqual(got, map[string]any{"type": "object", "properties": map[string]any{}}) {
		t.Errorf("schema of a tool without parameters = %v", got)
	}
}

func TestBadRequest(t *testing.T) {
	for name, req := range map[string]*model.Request{
		"result in user message": {Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.ToolResult{CallID: "c"}}}}},
		"text in tool message":   {Messages: []model.Message{{Role: model.RoleTool, Parts: model.Parts{model.Text{Text: "x"}}}}},
		"unknown role":           {Messages: []model.Message{{Role: "system"}}},
		"bad schema":             {Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[`)}}},
	} {
		c := anthropic.New(anthropic.Options{BaseURL: "http://127.0.0.1:1"})
		_, _, err := run(t, c, req)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if name != "bad schema" && !errors.Is(err, anthropic.ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
	}
}

func TestEffortBudget(t *testing.T) {
	for effort, want := range map[string]int{"": 0, "none": 0, "minimal": 1024, "low": 4096, "medium": 10000, "high": 32000, "max": 64000, "20000": 20000} {
		if got, err := anthropic.EffortBudget(effort); err != nil || got != want {
			t.Errorf("EffortBudget(%q) = %d, %v; want %d", effort, got, err, want)
		}
	}
	for _, bad := range []string{"extreme", "100", "-5"} {
		if _, err := anthropic.EffortBudget(bad); err == nil || !strings.Contains(err.Error(), "at least 1024") {
			t.Errorf("EffortBudget(%q): err %v", bad, err)
		}
	}
}

// The request's own system text is a system block after the cached
// prompt, and the reminder ends the final turn marked as a system
// reminder, after every cache breakpoint.
func TestSystemContextAndReminder(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	req := hello()
	req.System = "You are meka."
	req.SystemContext = "[todo list]\n[ ] 1. a (s1)"
	req.Reminder = "[run plan]\n[ ] b"
	mustRun(t, client(srv, false), req)
	r := sent(t, srv, 0)
	if len(r.System) != 2 || r.System[0].CacheControl == nil || r.System[1].Text != req.SystemContext || r.System[1].CacheControl != nil {
		t.Errorf("system %+v", r.System)
	}
	last := r.Messages[len(r.Messages)-1]
	end := last.Content[len(last.Content)-1]
	if last.Role != "user" || end.Text != "<system-reminder>\n[run plan]\n[ ] b\n</system-reminder>" || end.CacheControl != nil {
		t.Errorf("last turn %+v", last)
	}
	if before := last.Content[len(last.Content)-2]; before.CacheControl == nil {
		t.Errorf("the breakpoint moved onto the reminder: %+v", last.Content)
	}
}
