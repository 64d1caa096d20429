package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

const twoRounds = `{"rounds":[
 {"thinking":"Look before leaping.","signature":"sig1","text":"Reading the file now.",
  "tool_calls":[{"id":"c1","name":"file_read","arguments":{"path":"a.go"}},{"id":"c2","name":"list","arguments":{}}],
  "usage":{"input_tokens":10,"output_tokens":5,"cache_read_tokens":3}},
 {"text":"Done.","stop":"max_tokens"}
]}`

func mustParse(t *testing.T, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestProviderPlaysRoundsInOrder(t *testing.T) {
	p := script.New(mustParse(t, twoRounds))
	var events []model.Event
	resp, err := model.Collect(p.Stream(t.Context(), &model.Request{System: "sys"}), func(ev model.Event) {
		events = append(events, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := model.Message{Role: model.RoleAssistant, Parts: model.Parts{
		model.Thinking{Text: "Look before leaping.", Signature: "sig1", Provider: "script"},
		model.Text{Text: "Reading the file now."},
		model.ToolCall{ID: "c1", Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
		model.ToolCall{ID: "c2", Name: "list", Arguments: json.RawMessage(`{}`)},
	}}
	if !reflect.DeepEqual(resp.Message, want) {
		t.Errorf("message = %#v\nwant %#v", resp.Message, want)
	}
	if resp.Stop != model.StopToolUse {
		t.Errorf("stop = %q, want tool_use (the default with tool calls)", resp.Stop)
	}
	if resp.Usage != (model.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3}) {
		t.Errorf("usage = %+v", resp.Usage)
	}

	// The deltas add up to the response, and arrive in several pieces.
	var text, thinking strings.Builder
	args := map[int]string{}
	var textDeltas int
	for _, ev := range events {
		switch ev := ev.(type) {
		case model.TextDelta:
			text.WriteString(ev.Text)
			textDeltas++
		case model.ThinkingDelta:
			thinking.WriteString(ev.Text)
		case model.ToolCallDelta:
			args[ev.Index] += ev.Arguments
		}
	}
	if text.String() != "Reading the file now." || thinking.String() != "Look before leaping." {
		t.Errorf("deltas = %q / %q", text.String(), thinking.String())
	}
	if textDeltas < 2 {
		t.Errorf("text came in %d deltas, want several", textDeltas)
	}
	if args[0] != `{"path":"a.go"}` || args[1] != `{}` {
		t.Errorf("argument deltas = %v", args)
	}

	resp, err = model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "Done." || resp.Stop != model.StopMaxTokens {
		t.Errorf("second round = %q %q", resp.Message.Text(), resp.Stop)
	}
	if p.Remaining() != 0 {
		t.Errorf("remaining = %d", p.Remaining())
	}
}

func TestProviderExhausted(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[{"text":"only"}]}`))
	if _, err := model.Collect(p.Stream(t.Context(), &model.Request{}), nil); err != nil {
		t.Fatal(err)
	}
	_, err := model.Collect(p.Stream(t.Context(), &model.Request{System: "again"}), nil)
	if !errors.Is(err, model.ErrScriptExhausted) {
		t.Fatalf("err = %v, want ErrScriptExhausted", err)
	}
	if !strings.Contains(err.Error(), "1 rounds") {
		t.Errorf("error %q does not say how many rounds the script has", err)
	}
	if reqs := p.Requests(); len(reqs) != 2 || reqs[1].System != "again" {
		t.Errorf("requests = %+v, want both recorded", reqs)
	}
}

func TestProviderErrorRound(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[
		{"error":{"status":429,"body":"slow down","retry_after":"1500ms"}},
		{"error":{"status":0}},
		{"error":{"status":400,"body":"bad"}}]}`))
	for _, want := range []struct {
		status     int
		retryAfter time.Duration
		retryable  bool
	}{
		{429, 2 * time.Second, true},
		{0, 0, true},
		{400, 0, false},
	} {
		_, err := model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("err = %v, want *model.Error", err)
		}
		if me.Provider != "script" || me.Status != want.status || me.RetryAfter != want.retryAfter || me.Retryable() != want.retryable {
			t.Errorf("error = %+v (retryable %v), want %+v", me, me.Retryable(), want)
		}
	}
}

func TestProviderCanceled(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[{"text":"a long reply in pieces"}]}`))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got error
	for ev, err := range p.Stream(ctx, &model.Request{}) {
		if err != nil {
			got = err
			break
		}
		if _, ok := ev.(model.TextDelta); ok {
			cancel()
		}
	}
	if !errors.Is(got, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", got)
	}
}

func TestProviderBreakStopsStream(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[{"text":"abcdef"}]}`))
	n := 0
	for range p.Stream(t.Context(), &model.Request{}) {
		n++
		break
	}
	if n != 1 {
		t.Errorf("got %d events after break", n)
	}
}

func TestProviderConcurrent(t *testing.T) {
	const n = 20
	var sb strings.Builder
	sb.WriteString(`{"rounds":[`)
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"text":"r"}`)
	}
	sb.WriteString(`]}`)
	p := script.New(mustParse(t, sb.String()))
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(p.Requests()) != n || p.Remaining() != 0 {
		t.Errorf("requests %d, remaining %d", len(p.Requests()), p.Remaining())
	}
}

func TestRequestsAreCopies(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[{"text":"ok"}]}`))
	req := &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "hi"}}}}}
	if _, err := model.Collect(p.Stream(t.Context(), req), nil); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Parts[0] = model.Text{Text: "changed"}
	if got := p.Requests()[0].Messages[0].Text(); got != "hi" {
		t.Errorf("recorded request changed with the caller's: %q", got)
	}
}

func TestRawArguments(t *testing.T) {
	p := script.New(mustParse(t, `{"rounds":[{"tool_calls":[{"id":"c","name":"edit","raw_arguments":"{\"path\":"}]}]}`))
	resp, err := model.Collect(p.Stream(t.Context(), &model.Request{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(resp.Message.ToolCalls()[0].Arguments); got != `"{\"path\":"` {
		t.Errorf("malformed arguments = %s, want them kept as a JSON string", got)
	}
}

func TestParseRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `{"rounds":`,
		"unknown field":   `{"rounds":[{"txt":"typo"}]}`,
		"unknown stop":    `{"rounds":[{"stop":"done"}]}`,
		"nameless call":   `{"rounds":[{"tool_calls":[{"id":"c"}]}]}`,
		"success status":  `{"rounds":[{"error":{"status":200}}]}`,
		"bad retry_after": `{"rounds":[{"error":{"status":429,"retry_after":"later"}}]}`,
	} {
		if _, err := script.Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, in)
		}
	}
	if _, err := script.Parse([]byte(`{"rounds":[{"stop":"done"}]}`)); !errors.Is(err, script.ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalid", err)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"1s":                            "1",
		"1500ms":                        "2",
		"0s":                            "0",
		"3":                             "3",
		"Sun, 01 Mar 2026 12:00:07 GMT": "Sun, 01 Mar 2026 12:00:07 GMT",
		"soon":                          "",
	} {
		if got := (&script.Error{RetryAfter: in}).RetryAfterHeader(); got != want {
			t.Errorf("RetryAfterHeader(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(twoRounds), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := script.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rounds) != 2 {
		t.Errorf("rounds = %d", len(s.Rounds))
	}
	if _, err := script.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestChunks(t *testing.T) {
	for _, s := range []string{"", "a", "héllo wörld", "日本語のテキスト"} {
		parts := script.Chunks(s, 3)
		if strings.Join(parts, "") != s || len(parts) > 3 {
			t.Errorf("Chunks(%q) = %q", s, parts)
		}
		for _, p := range parts {
			if !utf8.ValidString(p) {
				t.Errorf("Chunks(%q) cut a rune: %q", s, p)
			}
		}
	}
}
