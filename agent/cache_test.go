package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/openai"
	"meka.dev/meka/model/responses"
	"meka.dev/meka/model/script"
	"meka.dev/meka/tool"
)

// contributorFunc adapts a function to agent.RequestContributor.
type contributorFunc func(ctx context.Context, info agent.RequestInfo) []model.Part

func (f contributorFunc) Contribute(ctx context.Context, info agent.RequestInfo) []model.Part {
	return f(ctx, info)
}

// roundContext changes every request, as a plan reminder does.
var roundContext = contributorFunc(func(_ context.Context, info agent.RequestInfo) []model.Part {
	return []model.Part{model.Text{Text: fmt.Sprintf("[reminder] round %d of turn %d", info.Round, info.Turn)}}
})

// tenRounds is a turn of nine tool rounds and a final answer.
func tenRounds(t *testing.T) *script.Script {
	t.Helper()
	var rounds []string
	for i := 1; i <= 9; i++ {
		rounds = append(rounds, fmt.Sprintf(`{"text":"step %d","tool_calls":[{"id":"c%d","name":"probe","arguments":{"n":%d}}]}`, i, i, i))
	}
	rounds = append(rounds, `{"text":"done"}`)
	s, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rounds, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runCacheTurn runs a ten-round turn against prov and checks what it
// stored: the per-request context is never persisted.
func runCacheTurn(t *testing.T, h *harness, prov model.Provider) {
	t.Helper()
	reg := tool.NewRegistry()
	if err := reg.Add(newTool("probe", nil)); err != nil {
		t.Fatal(err)
	}
	e, err := agent.New(agent.Options{Provider: prov, Log: h, SessionID: h.id, Tools: reg,
		System: "You are meka.", Contributors: []agent.RequestContributor{roundContext}}, h.rows())
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(t.Context(), userText("probe ten times"))
	if err != nil || res.Rounds != 10 {
		t.Fatalf("res %+v err %v", res, err)
	}
	for _, r := range h.rows() {
		b, _ := json.Marshal(r.Entry)
		if bytes.Contains(b, []byte("[reminder]")) {
			t.Fatalf("the per-request context was stored: %s", b)
		}
	}
}

// Every Anthropic request's marked prefix (tools, system, messages up to
// the last cache breakpoint) is the same bytes as the previous request's,
// and the per-request context sits after the last breakpoint.
func TestAnthropicCachedPrefixIsStable(t *testing.T) {
	h := newHarness(t, `[]`)
	srv := modeltest.NewServer(t, tenRounds(t))
	runCacheTurn(t, h, anthropic.New(anthropic.Options{BaseURL: srv.URL, Model: "claude-test", HTTPClient: srv.Client()}))
	reqs := srv.Requests()
	if len(reqs) != 10 {
		t.Fatalf("%d requests", len(reqs))
	}
	type body struct {
		System   []json.RawMessage `json:"system"`
		Tools    []json.RawMessage `json:"tools"`
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	marked := func(b json.RawMessage) bool { return bytes.Contains(b, []byte(`"cache_control"`)) }
	unmark := func(b json.RawMessage) string {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "cache_control")
		out, _ := json.Marshal(v)
		return string(out)
	}
	// prefix lists the blocks up to and including the last marked one,
	// with breakpoints removed (the API matches prefixes without them).
	prefix := func(i int, raw []byte) []string {
		var b body
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.System) != 1 || !marked(b.System[0]) {
			t.Fatalf("request %d: system not marked: %s", i, b.System)
		}
		var flat []json.RawMessage
		var labels []string
		for _, x := range b.Tools {
			flat, labels = append(flat, x), append(labels, "tool")
		}
		flat, labels = append(flat, b.System[0]), append(labels, "system")
		for _, m := range b.Messages {
			for _, c := range m.Content {
				flat, labels = append(flat, c), append(labels, m.Role)
			}
		}
		end := -1
		for j, c := range flat {
			if marked(c) {
				end = j
			}
			if strings.Contains(string(c), "[reminder]") && j != len(flat)-1 {
				t.Fatalf("request %d: context block inside the conversation: %s", i, c)
			}
		}
		ctx := flat[len(flat)-1]
		if !strings.Contains(string(ctx), fmt.Sprintf("[reminder] round %d", i+1)) || marked(ctx) {
			t.Fatalf("request %d does not end with an unmarked context block: %s", i, ctx)
		}
		if end <= len(b.Tools) || end != len(flat)-2 {
			t.Fatalf("request %d: the last breakpoint (block %d of %d) is not on the last persisted block", i, end, len(flat))
		}
		out := make([]string, end+1)
		for j := range out {
			out[j] = labels[j] + " " + unmark(flat[j])
		}
		return out
	}
	prev := prefix(0, reqs[0].Body)
	for i := 1; i < len(reqs); i++ {
		cur := prefix(i, reqs[i].Body)
		if len(cur) <= len(prev) {
			t.Fatalf("request %d: marked prefix did not grow (%d <= %d blocks)", i, len(cur), len(prev))
		}
		for j := range prev {
			if cur[j] != prev[j] {
				t.Fatalf("request %d: block %d differs from the previous request's:\n%s\n%s", i, j, prev[j], cur[j])
			}
		}
		prev = cur
	}
}

// Every OpenAI request repeats the previous request's system prompt,
// tools and conversation byte for byte; the per-request context is the
// last message, never merged into the user's text, and the session id is
// sent as prompt_cache_key.
func TestOpenAIPrefixIsStable(t *testing.T) {
	h := newHarness(t, `[]`)
	srv := modeltest.NewServer(t, tenRounds(t))
	runCacheTurn(t, h, openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client(), CacheKey: true}))
	reqs := srv.Requests()
	if len(reqs) != 10 {
		t.Fatalf("%d requests", len(reqs))
	}
	type body struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
		Key      string            `json:"prompt_cache_key"`
	}
	var prev body
	for i, r := range reqs {
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Key != h.id {
			t.Errorf("request %d: prompt_cache_key %q, want the session id", i, b.Key)
		}
		n := len(b.Messages)
		if want := fmt.Sprintf(`{"content":"[reminder] round %d of turn 1","role":"user"}`, i+1); string(b.Messages[n-1]) != want {
			t.Fatalf("request %d ends with %s", i, b.Messages[n-1])
		}
		for _, m := range b.Messages[:n-1] {
			if bytes.Contains(m, []byte("[reminder]")) {
				t.Fatalf("request %d: context merged into the conversation: %s", i, m)
			}
		}
		if i > 0 {
			if !bytes.Equal(b.Tools, prev.Tools) {
				t.Fatalf("request %d: tools changed", i)
			}
			growsOn(t, i, "message", prev.Messages, b.Messages)
		}
		prev = b
	}
}

// A server other than OpenAI's is not sent prompt_cache_key unless asked.
func TestOpenAICacheKeyOnlyWhereTaken(t *testing.T) {
	srv := modeltest.NewServer(t, &script.Script{Rounds: []script.Round{{Text: "hi"}}})
	c := openai.New(openai.Options{BaseURL: srv.URL + "/v1", Model: "m", HTTPClient: srv.Client()})
	if _, err := model.Collect(c.Stream(t.Context(), &model.Request{CacheKey: "k",
		Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "hi"}}}}}), nil); err != nil {
		t.Fatal(err)
	}
	if b := srv.Requests()[0].Body; bytes.Contains(b, []byte("prompt_cache_key")) {
		t.Fatalf("sent %s", b)
	}
}

// Every Responses request repeats the previous one's instructions, tools
// and input items byte for byte, reasoning items included; the
// per-request context is the last item, and the session id is the
// prompt_cache_key.
func TestResponsesPrefixIsStable(t *testing.T) {
	h := newHarness(t, `[]`)
	sc := tenRounds(t)
	for i := range sc.Rounds {
		sc.Rounds[i].Thinking = fmt.Sprintf("thought %d", i)
	}
	srv := modeltest.NewServer(t, sc)
	runCacheTurn(t, h, responses.New(responses.Options{BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client()}))
	reqs := srv.Requests()
	if len(reqs) != 10 {
		t.Fatalf("%d requests", len(reqs))
	}
	type body struct {
		Instructions string            `json:"instructions"`
		Tools        json.RawMessage   `json:"tools"`
		Input        []json.RawMessage `json:"input"`
		Key          string            `json:"prompt_cache_key"`
	}
	var prev body
	for i, r := range reqs {
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if b.Key != h.id {
			t.Errorf("request %d: prompt_cache_key %q, want the session id", i, b.Key)
		}
		n := len(b.Input)
		if want := fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"[reminder] round %d of turn 1"}]}`, i+1); string(b.Input[n-1]) != want {
			t.Fatalf("request %d ends with %s", i, b.Input[n-1])
		}
		if i > 0 {
			if b.Instructions != prev.Instructions || !bytes.Equal(b.Tools, prev.Tools) {
				t.Fatalf("request %d: instructions or tools changed", i)
			}
			growsOn(t, i, "item", prev.Input, b.Input)
			if !bytes.Contains(r.Body, []byte(fmt.Sprintf(`"encrypted_content":"modeltest-encrypted-%d"`, i))) {
				t.Fatalf("request %d lacks the previous round's reasoning item", i)
			}
		}
		prev = b
	}
}

// Every Gemini request repeats the previous one's system instruction,
// tools and contents byte for byte, signed parts included; the
// per-request context is the last content.
func TestGeminiPrefixIsStable(t *testing.T) {
	h := newHarness(t, `[]`)
	sc := tenRounds(t)
	for i := range sc.Rounds {
		sc.Rounds[i].Thinking = fmt.Sprintf("thought %d", i)
	}
	srv := modeltest.NewServer(t, sc)
	runCacheTurn(t, h, gemini.New(gemini.Options{BaseURL: srv.URL + "/v1beta", Model: "gemini-test", HTTPClient: srv.Client()}))
	reqs := srv.Requests()
	if len(reqs) != 10 {
		t.Fatalf("%d requests", len(reqs))
	}
	type body struct {
		System   json.RawMessage   `json:"systemInstruction"`
		Tools    json.RawMessage   `json:"tools"`
		Contents []json.RawMessage `json:"contents"`
	}
	var prev body
	for i, r := range reqs {
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		n := len(b.Contents)
		if want := fmt.Sprintf(`{"role":"user","parts":[{"text":"[reminder] round %d of turn 1"}]}`, i+1); string(b.Contents[n-1]) != want {
			t.Fatalf("request %d ends with %s", i, b.Contents[n-1])
		}
		if i > 0 {
			if !bytes.Equal(b.System, prev.System) || !bytes.Equal(b.Tools, prev.Tools) {
				t.Fatalf("request %d: system instruction or tools changed", i)
			}
			growsOn(t, i, "content", prev.Contents, b.Contents)
			if !bytes.Contains(r.Body, []byte(fmt.Sprintf(`"thoughtSignature":"modeltest-signature-%d"`, i))) {
				t.Fatalf("request %d lacks the previous round's signed call", i)
			}
		}
		prev = b
	}
}

// growsOn fails t unless request i's items, but its last (the
// per-request context), repeat the previous request's, but its last,
// byte for byte, and add to them: the prefix a provider's cache keys on.
func growsOn(t *testing.T, i int, what string, prev, cur []json.RawMessage) {
	t.Helper()
	pn := len(prev) - 1
	if len(cur)-1 <= pn {
		t.Fatalf("request %d: conversation did not grow", i)
	}
	for j := range pn {
		if !bytes.Equal(cur[j], prev[j]) {
			t.Fatalf("request %d: %s %d differs:\n%s\n%s", i, what, j, prev[j], cur[j])
		}
	}
}
