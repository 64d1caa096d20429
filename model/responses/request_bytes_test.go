package responses_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
)

// TestRequestBytes pins the exact bytes of request bodies: field order,
// omission and escaping must not drift, or a prompt cache misses.
func TestRequestBytes(t *testing.T) {
	edge := &model.Request{
		System:          "sys <b>&\u2028 é \xff end",
		CacheKey:        "sess-1",
		MaxOutputTokens: 9,
		Context:         model.Parts{model.Text{Text: "<ctx a&b>"}},
		Tools: []model.ToolSpec{
			{Name: "t", Description: "a<b>&c", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":12345678901234567890}}}`)},
			{Name: "noparams"},
			{Name: "nullparams", Parameters: json.RawMessage(`null`)},
		},
		Messages: []model.Message{
			{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "u"}, model.Resource{URI: "file:///a.go", Text: "package a"}}},
			{Role: model.RoleAssistant, Parts: model.Parts{
				model.Thinking{Text: "s", Signature: `{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"e\u003c"}`, Provider: responses.Name},
				model.Text{Text: "x"},
				model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"a": 1, "b":"<"}`)}}},
			{Role: model.RoleTool, Parts: model.Parts{model.ToolResult{CallID: "c", Name: "t", IsError: true, Content: model.Parts{model.Text{Text: "no"}}}}},
			{Role: model.RoleAssistant},
			{Role: model.RoleUser},
		},
	}
	for _, tc := range []struct {
		name string
		o    responses.Options
		req  *model.Request
	}{
		{"hello", responses.Options{Model: "gpt-test"}, hello()},
		{"empty", responses.Options{}, &model.Request{}},
		{"edge", responses.Options{Model: "m", ReasoningEffort: "low", MaxOutputTokens: 100}, edge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"ok"}]}`))
			tc.o.BaseURL = "http://modeltest.invalid/v1"
			tc.o.HTTPClient = &http.Client{Transport: h.Transport()}
			mustRun(t, responses.New(tc.o), tc.req)
			golden(t, "request_"+tc.name+".raw.json", h.Requests()[0].Body)
		})
	}
}

// A kept reasoning item goes back less its id and status, every other
// byte as it came.
func TestReplayedItem(t *testing.T) {
	for in, want := range map[string]string{
		`{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"a\u003cb"}],"encrypted_content":"gA+/=","status":"completed"}`: `{"type":"reasoning","summary":[{"type":"summary_text","text":"a\u003cb"}],"encrypted_content":"gA+/="}`,
		`{"type":"reasoning","encrypted_content":"x"}`:                        `{"type":"reasoning","encrypted_content":"x"}`,
		`{ "id" : "rs_2", "type" : "reasoning" , "encrypted_content" : "y" }`: `{"type" : "reasoning","encrypted_content" : "y"}`,
		`not json`: `not json`,
	} {
		h := modeltest.NewHandler(parse(t, `{"rounds":[{"text":"ok"}]}`))
		c := responses.New(responses.Options{BaseURL: "http://modeltest.invalid/v1", HTTPClient: &http.Client{Transport: h.Transport()}})
		req := &model.Request{Messages: []model.Message{{Role: model.RoleAssistant, Parts: model.Parts{model.Thinking{Signature: in, Provider: responses.Name}}}}}
		mustRun(t, c, req)
		body := string(h.Requests()[0].Body)
		_, got, _ := strings.Cut(body, `"input":[`)
		got = strings.TrimSuffix(got, "]}")
		if in == "not json" {
			if got != "" {
				t.Errorf("bytes that are no item were sent: %s", got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s\n sent %s\n want %s", in, got, want)
		}
	}
}
