package openai_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
)

var png = []byte("\x89PNG\r\n\x1a\nfake")

// conversation has every part kind in the places they occur.
func conversation(vision bool) *model.Request {
	return &model.Request{
		System: "You are meka.",
		Tools: []model.ToolSpec{{
			Name:        "file_read",
			Description: "Read a file.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		}},
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: model.Parts{
				model.Text{Text: "Explain"},
				model.Resource{URI: "file:///w/a.go", Text: "package a"},
				model.Resource{URI: "https://go.dev/ref/spec", Name: "spec"},
				model.Image{MediaType: "image/png", Data: png, Name: "shot.png"},
			}},
			{Role: model.RoleAssistant, Parts: model.Parts{
				model.Thinking{Text: "claude thoughts", Signature: "sig", Provider: "anthropic"},
				model.Thinking{Text: "own thoughts", Provider: "openai"},
				model.Text{Text: "Reading both."},
				model.ToolCall{ID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				model.ToolCall{ID: "call_2", Name: "file_read"},
			}},
			{Role: model.RoleTool, Parts: model.Parts{
				model.ToolResult{CallID: "call_1", Name: "file_read", Content: model.Parts{model.Text{Text: "package a"}}},
				model.ToolResult{CallID: "call_2", Name: "file_read", IsError: true, Content: model.Parts{
					model.Text{Text: "no such file"},
					model.Image{MediaType: "image/png", Data: png},
				}},
			}},
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

			if strings.Contains(string(sent), "thoughts") {
				t.Error("thinking was sent to openai")
			}
			n := strings.Count(string(sent), "data:image/png;base64,")
			if tc.vision && n != 2 {
				t.Errorf("%d images sent natively, want 2 (prompt and tool result)", n)
			}
			if !tc.vision && (n != 0 || !strings.Contains(string(sent), "image shot.png was omitted")) {
				t.Errorf("images were not replaced by placeholders")
			}
		})
	}
}

func TestRequestWireShape(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"}]}`))
	mustRun(t, client(srv, false), conversation(false))
	var b struct {
		Model    string
		Messages []struct {
			Role       string
			Content    any
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string
				Type     string
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		}
		Tools []struct {
			Type     string
			Function struct {
				Name, Description string
				Parameters        map[string]any
			}
		}
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &b); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range b.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,tool" {
		t.Fatalf("roles = %s", got)
	}
	if b.Model != "gpt-test" || b.Messages[0].Content != "You are meka." {
		t.Errorf("model %q, system %v", b.Model, b.Messages[0].Content)
	}
	user, _ := b.Messages[1].Content.(string)
	for _, want := range []string{"Explain", `<resource uri="file:///w/a.go">package a</resource>`, `<resource_link name="spec" uri="https://go.dev/ref/spec"></resource_link>`} {
		if !strings.Contains(user, want) {
			t.Errorf("user content %q lacks %q", user, want)
		}
	}
	a := b.Messages[2]
	if a.Content != "Reading both." || len(a.ToolCalls) != 2 || a.ToolCalls[0].Type != "function" ||
		a.ToolCalls[0].Function.Arguments != `{"path":"a.go"}` || a.ToolCalls[1].Function.Arguments != "{}" {
		t.Errorf("assistant = %+v", a)
	}
	if b.Messages[3].ToolCallID != "call_1" || b.Messages[3].Content != "package a" {
		t.Errorf("first tool message = %+v", b.Messages[3])
	}
	if c, _ := b.Messages[4].Content.(string); b.Messages[4].ToolCallID != "call_2" || !strings.HasPrefix(c, "Error:") {
		t.Errorf("failed tool result = %+v", b.Messages[4])
	}
	if len(b.Tools) != 1 || b.Tools[0].Type != "function" || b.Tools[0].Function.Name != "file_read" ||
		b.Tools[0].Function.Description != "Read a file." || b.Tools[0].Function.Parameters["required"] == nil {
		t.Errorf("tools = %+v", b.Tools)
	}
}

func TestThinkingNotReplayed(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"thinking":"Let me reason.","text":"Answer."},{"text":"ok"}]}`))
	c := client(srv, false)
	resp, events := mustRun(t, c, hello())
	want := model.Thinking{Text: "Let me reason.", Provider: "openai"}
	if resp.Message.Parts[0] != want {
		t.Errorf("first part = %#v, want %#v", resp.Message.Parts[0], want)
	}
	if _, ok := events[0].(model.ThinkingDelta); !ok {
		t.Errorf("first event = %T, want ThinkingDelta", events[0])
	}
	next := hello()
	next.Messages = append(next.Messages, resp.Message, model.Message{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "more"}}})
	mustRun(t, c, next)
	if strings.Contains(string(srv.Requests()[1].Body), "Let me reason.") {
		t.Error("openai thinking was replayed to openai")
	}
}

func TestBadRequest(t *testing.T) {
	for name, req := range map[string]*model.Request{
		"result in user message": {Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.ToolResult{CallID: "c"}}}}},
		"text in tool message":   {Messages: []model.Message{{Role: model.RoleTool, Parts: model.Parts{model.Text{Text: "x"}}}}},
		"unknown role":           {Messages: []model.Message{{Role: "system"}}},
		"bad schema":             {Tools: []model.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[`)}}},
	} {
		c := openai.New(openai.Options{BaseURL: "http://127.0.0.1:1"})
		_, _, err := run(t, c, req)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if name != "bad schema" && !errors.Is(err, openai.ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
	}
}

// A profile's reasoning effort goes as reasoning_effort; none is sent
// without one.
func TestReasoningEffort(t *testing.T) {
	srv := modeltest.NewServer(t, parse(t, `{"rounds":[{"text":"ok"},{"text":"ok"}]}`))
	mustRun(t, openai.New(openai.Options{BaseURL: srv.URL + "/v1", ReasoningEffort: "high"}), hello())
	mustRun(t, openai.New(openai.Options{BaseURL: srv.URL + "/v1"}), hello())
	if got := body(t, srv, 0)["reasoning_effort"]; got != "high" {
		t.Errorf("reasoning_effort %v, want high", got)
	}
	if _, ok := body(t, srv, 1)["reasoning_effort"]; ok {
		t.Error("reasoning_effort sent without one set")
	}
}
