package agent_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/model/anthropic"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
	"meka.dev/meka/model/script"
	"meka.dev/meka/session"
)

// A turn whose profile fails with 429, 503 or a refused connection once
// its retries are spent goes on with the fallback profile, of another
// wire format: the request is the same conversation less the first
// provider's reasoning, the switch is a row and a notice saying so, and
// the next turn starts on the fallback.
func TestFallback(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rounds string // the primary's rounds after its first reply
		down   bool   // the primary stops listening after its first reply
	}{
		{"429", `{"error":{"status":429,"body":"slow down"}},{"error":{"status":429,"body":"slow down"}}`, false},
		{"503", `{"error":{"status":503}},{"error":{"status":503}}`, false},
		{"connection refused", ``, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, `[]`)
			first := `{"thinking":"plan","signature":"enc-1","text":"First, on the primary."}`
			if tc.rounds != "" {
				first += ","
			}
			primary := modeltest.NewServer(t, parseScript(t, `{"rounds":[`+first+tc.rounds+`]}`))
			backup := modeltest.NewServer(t, parseScript(t, `{"rounds":[{"text":"Second, on the fallback."},{"text":"Third, still there."}]}`))
			retry := model.Retry{Attempts: 2, Base: time.Millisecond, Max: time.Millisecond}
			fb := model.NewFallback([]model.Profile{
				{Name: "gpt", Provider: responses.New(responses.Options{BaseURL: primary.URL + "/v1", Model: "gpt-test", Retry: retry})},
				{Name: "claude", Provider: anthropic.New(anthropic.Options{BaseURL: backup.URL, APIKey: "k", Model: "claude-test", Retry: retry})},
			})
			var notices []session.Notice
			e, err := agent.New(agent.Options{Provider: fb, Log: h, SessionID: h.id, Events: func(ev agent.Event) {
				if n, ok := ev.(agent.Notice); ok {
					notices = append(notices, n.Notice)
				}
			}}, h.rows())
			if err != nil {
				t.Fatal(err)
			}
			if res, err := e.Run(t.Context(), userText("one")); err != nil || res.Reply != "First, on the primary." {
				t.Fatalf("turn 1: %+v %v", res, err)
			}
			if tc.down {
				primary.Close()
			}
			res, err := e.Run(t.Context(), userText("two"))
			if err != nil || res.Reply != "Second, on the fallback." {
				t.Fatalf("turn 2: %+v %v", res, err)
			}
			if n := len(primary.Requests()); !tc.down && n != 3 {
				t.Fatalf("the primary got %d requests, want its first and two tries", n)
			}
			body := backup.Requests()[0].Body
			if !bytes.Contains(body, []byte("First, on the primary.")) || bytes.Contains(body, []byte("enc-1")) || bytes.Contains(body, []byte(`"plan"`)) {
				t.Fatalf("the fallback was sent %s", body)
			}
			if len(notices) != 1 || !strings.Contains(notices[0].Title, "Switched to profile claude: profile gpt failed") ||
				!strings.Contains(notices[0].Description, "1 thinking part(s) of openai-responses are not sent to anthropic") {
				t.Fatalf("notices %+v", notices)
			}
			var rowed bool
			for _, r := range h.rows() {
				if n, ok := r.Entry.(session.Notice); ok && n == notices[0] && r.Turn == 2 {
					rowed = true
				}
			}
			if !rowed {
				t.Fatal("the switch is not a row of turn 2")
			}
			if fb.Active().Name != "claude" {
				t.Fatalf("active %q", fb.Active().Name)
			}
			before := len(primary.Requests())
			if res, err := e.Run(t.Context(), userText("three")); err != nil || res.Reply != "Third, still there." {
				t.Fatalf("turn 3: %+v %v", res, err)
			}
			if len(primary.Requests()) != before || len(notices) != 1 {
				t.Fatal("turn 3 did not start on the fallback")
			}
		})
	}
}

// A failure that another profile would share (a 400) does not move the
// call; neither does one after output was shown.
func TestNoFallbackOnFatal(t *testing.T) {
	primary := modeltest.NewServer(t, parseScript(t, `{"rounds":[{"error":{"status":400,"body":"bad"}}]}`))
	backup := modeltest.NewServer(t, parseScript(t, `{"rounds":[{"text":"no"}]}`))
	fb := model.NewFallback([]model.Profile{
		{Name: "a", Provider: responses.New(responses.Options{BaseURL: primary.URL + "/v1"})},
		{Name: "b", Provider: anthropic.New(anthropic.Options{BaseURL: backup.URL, APIKey: "k"})},
	})
	_, err := model.Collect(fb.Stream(t.Context(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: model.Parts{model.Text{Text: "x"}}}}}), nil)
	if err == nil || len(backup.Requests()) != 0 || fb.Active().Name != "a" {
		t.Fatalf("err %v, %d fallback requests", err, len(backup.Requests()))
	}
}

func parseScript(t *testing.T, s string) *script.Script {
	t.Helper()
	sc, err := script.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// The provider's rate-limit headers reach the engine after every round;
// falling below a tenth left is a notice row, once.
func TestRateLimitNotice(t *testing.T) {
	h := newHarness(t, `[]`)
	srv := modeltest.NewServer(t, parseScript(t, `{"rounds":[{"text":"a"},{"text":"b"},{"text":"c"}]}`))
	srv.SetHeader("x-ratelimit-limit-tokens", "100000")
	srv.SetHeader("x-ratelimit-remaining-tokens", "50000")
	srv.SetHeader("x-ratelimit-reset-tokens", "20s")
	var limits []model.RateLimit
	e, err := agent.New(agent.Options{Provider: responses.New(responses.Options{BaseURL: srv.URL + "/v1"}), Log: h, SessionID: h.id,
		Events: func(ev agent.Event) {
			if r, ok := ev.(agent.RateLimit); ok {
				limits = append(limits, r.Limit)
			}
		}}, h.rows())
	if err != nil {
		t.Fatal(err)
	}
	notices := func() (out []string) {
		for _, r := range h.rows() {
			if n, ok := r.Entry.(session.Notice); ok {
				out = append(out, n.Title)
			}
		}
		return out
	}
	for i, remaining := range []string{"50000", "9000", "8000"} {
		srv.SetHeader("x-ratelimit-remaining-tokens", remaining)
		if _, err := e.Run(t.Context(), userText("go")); err != nil {
			t.Fatal(err)
		}
		if len(limits) != i+1 || e.RateLimit() == nil || e.RateLimit().Tokens.Limit != 100000 {
			t.Fatalf("round %d: limits %+v", i, limits)
		}
	}
	if n := notices(); len(n) != 1 || n[0] != "Rate limit: 9000 of 100000 tokens left, resets in 20s" {
		t.Fatalf("notices %q", n)
	}
}
