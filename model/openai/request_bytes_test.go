package openai_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
)

// edge is a request with what a careless encoder would change: HTML
// characters, line separators, bytes that are not UTF-8, schema numbers
// that do not survive float64 as written, a tool without parameters, an
// assistant message of tool calls only, empty messages, a cache key and
// the per-request context.
func edge() *model.Request {
	return &model.Request{
		System:          "sys <b>&\u2028\u2029 \x7f \x00 é \xff end",
		CacheKey:        "sess-1",
		MaxOutputTokens: 9,
		Context:         model.Parts{model.Text{Text: "<ctx a&b>"}},
		Tools: []model.ToolSpec{
			{Name: "t", Description: "a<b>&c\u2028", Parameters: json.RawMessage(
				`{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890,"minimum":1.50,"x":1e21,"y":0.000001,"z":-0,"description":"<x>&\u2028"}}}`)},
			{Name: "noparams"},
			{Name: "nullparams", Parameters: json.RawMessage(`null`)},
			{Name: "emptyparams", Parameters: json.RawMessage(`{}`)},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "u"}}},
			{Role: model.RoleAssistant, Parts: model.Parts{model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"a": 1, "b":"<"}`)}}},
			{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "c", Name: "t"}}},
			{Role: model.RoleAssistant},
			{Role: model.RoleUser},
			// A server that gave a call no id.
			{Role: model.RoleAssistant, Parts: model.Parts{model.Text{Text: "x"}, model.ToolCall{Name: "t"}}},
			{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{Name: "t", Content: model.Parts{model.Text{Text: "r"}}}}},
		},
	}
}

// TestRequestBytes pins the exact bytes of request bodies, not only their
// meaning: a prompt cache matches a byte prefix, so field order, omission
// and escaping must not drift. The goldens were recorded from the OpenAI
// SDK this adapter replaced.
func TestRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    openai.Options
		req  *model.Request
	}{
		{"vision", openai.Options{Model: "gpt-test"}, conversation(true)},
		{"novision", openai.Options{Model: "gpt-test"}, conversation(false)},
		{"nomodel", openai.Options{}, hello()},
		{"empty", openai.Options{}, &model.Request{}},
		{"nostream", openai.Options{Model: "m", NoStream: true}, hello()},
		{"edge", openai.Options{Model: "m"}, edge()},
		{"edge_openai", openai.Options{BaseURL: openai.DefaultBaseURL, Model: "gpt"}, edge()},
		{"edge_cachekey", openai.Options{Model: "m", CacheKey: true, MaxOutputTokens: 100}, edge()},
		// A write_todos list joins the system message; an update_plan
		// reminder is the final message, in the system role.
		{"plan", openai.Options{Model: "m"}, func() *model.Request {
			r := hello()
			r.System, r.SystemContext, r.Reminder = "sys", "[todo list]\n[ ] 1. a (s1)", "[run plan]\n[ ] b"
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"ok"}]}`))
			if tc.o.BaseURL == "" {
				tc.o.BaseURL = "http://modeltest.invalid/v1"
			}
			tc.o.HTTPClient = &http.Client{Transport: h.Transport()}
			mustRun(t, openai.New(tc.o), tc.req)
			golden(t, "request_"+tc.name+".raw.json", h.Requests()[0].Body)
		})
	}
}
