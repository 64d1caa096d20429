package gemini_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
)

// TestRequestBytes pins the exact bytes of request bodies: field order,
// omission and escaping must not drift, or a prompt cache misses.
func TestRequestBytes(t *testing.T) {
	edge := &model.Request{
		System:          "sys <b>&\u2028 é \xff end",
		MaxOutputTokens: 9,
		Context:         model.Parts{model.Text{Text: "<ctx a&b>"}},
		Tools: []model.ToolSpec{
			{Name: "t", Description: "a<b>&c", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":["integer","null"]}}}`)},
			{Name: "noparams"},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "u"}, model.Resource{URI: "file:///a.go", Text: "package a"}}},
			{Role: model.RoleAssistant, Parts: model.Parts{
				model.Thinking{Text: "s", Signature: `[{"text":"s","thought":true},{"functionCall":{"name":"t","args":{"n":1}},"thoughtSignature":"A\u003c"}]`, Provider: gemini.Name},
				model.ToolCall{ID: "gemini_call_1", Name: "t", Arguments: json.RawMessage(`{"n":1}`)}}},
			{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "gemini_call_1", Name: "t", IsError: true, Content: model.Parts{model.Text{Text: "no"}}}}},
			{Role: model.RoleAssistant},
			{Role: model.RoleUser},
		},
	}
	for _, tc := range []struct {
		name string
		o    gemini.Options
		req  *model.Request
	}{
		{"hello", gemini.Options{Model: "gemini-test"}, hello()},
		{"empty", gemini.Options{Model: "m"}, &model.Request{}},
		{"edge", gemini.Options{Model: "m", ReasoningEffort: "2048", MaxOutputTokens: 100}, edge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"ok"}]}`))
			tc.o.BaseURL = "http://modeltest.invalid/v1beta"
			tc.o.HTTPClient = &http.Client{Transport: h.Transport()}
			mustRun(t, gemini.New(tc.o), tc.req)
			golden(t, "request_"+tc.name+".raw.json", h.Requests()[0].Body)
		})
	}
}
