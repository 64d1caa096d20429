package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/model/gemini"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/responses"
	"meka.dev/meka/model/script"
)

func parseScript(t *testing.T, rounds string) *script.Script {
	t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Responses reasoning item stored in the SQLite log goes back to the
// model byte for byte: on the session's next turn, after it is closed and
// opened again, in a fork, and after a later turn is rewound.
func TestResponsesReasoningReplayedByteForByte(t *testing.T) {
	rounds := `[{"thinking":"Plan it.","signature":"gAAAAB+/=\u003copaque","text":"First."},
		{"text":"Second."},{"text":"Third."},{"text":"Fourth."},{"text":"Withdrawn."},{"text":"Fifth."}]`
	f := newFixture(t, `[]`)
	srv := modeltest.NewServer(t, parseScript(t, rounds))
	prov := responses.New(responses.Options{BaseURL: srv.URL + "/v1", Model: "gpt-test", HTTPClient: srv.Client()})
	f.opts.Profiles = func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil }

	// The item as the server sent it.
	twin := modeltest.NewHandler(parseScript(t, rounds))
	var item string
	for _, line := range strings.Split(twin.Reply("/v1/responses", `{"model":"gpt-test","stream":true}`), "\n") {
		var ev struct {
			Type string
			Item json.RawMessage
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil &&
			ev.Type == "response.output_item.done" && strings.Contains(string(ev.Item), `"reasoning"`) {
			item = string(ev.Item)
		}
	}
	if !strings.Contains(item, `\u003copaque`) {
		t.Fatalf("item %q", item)
	}
	// It goes back less the id, which the API does not keep under store
	// false; every other byte as it came.
	item = strings.Replace(item, `"id":"rs_modeltest_1",`, "", 1)

	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(s *host.Session, text string) {
		t.Helper()
		if _, err := s.Prompt(t.Context(), model.Text{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	sent := func(n int) {
		t.Helper()
		var b struct{ Input []json.RawMessage }
		if err := json.Unmarshal(srv.Requests()[n].Body, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Input) < 2 || string(b.Input[1]) != item {
			t.Fatalf("request %d: input %s\nwant the reasoning item second, as sent:\n%s", n, b.Input, item)
		}
	}
	prompt(s, "one")
	prompt(s, "two")
	sent(1)

	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	s, err = h.Open(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	prompt(s, "three, resumed")
	sent(2)

	fork, err := h.Fork(t.Context(), s.ID(), -1)
	if err != nil {
		t.Fatal(err)
	}
	prompt(fork, "four, forked")
	sent(3)

	prompt(s, "withdrawn")
	if err := s.Withdraw(t.Context(), 4); err != nil {
		t.Fatal(err)
	}
	prompt(s, "five, after the rewind")
	sent(5)
	if strings.Contains(string(srv.Requests()[5].Body), "withdrawn") {
		t.Fatalf("the withdrawn turn was sent: %s", srv.Requests()[5].Body)
	}
}

// A Gemini model turn stored in the SQLite log goes back with its
// signed parts byte for byte after resume and in a fork.
func TestGeminiSignaturesReplayedByteForByte(t *testing.T) {
	rounds := `[{"thinking":"Plan it.","signature":"CpcB+/=\u003csig","text":"First."},{"text":"Second."},{"text":"Third."}]`
	f := newFixture(t, `[]`)
	srv := modeltest.NewServer(t, parseScript(t, rounds))
	prov := gemini.New(gemini.Options{BaseURL: srv.URL + "/v1beta", Model: "gemini-test", HTTPClient: srv.Client()})
	f.opts.Profiles = func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil }
	want := `{"role":"model","parts":[{"text":"Plan it.","thought":true},{"text":"First."},{"text":"","thoughtSignature":"CpcB+/=\u003csig"}]}`

	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	fork, err := h.Fork(t.Context(), s.ID(), -1)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = h.Open(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	for i, sess := range []*host.Session{s, fork} {
		if _, err := sess.Prompt(t.Context(), model.Text{Text: "again"}); err != nil {
			t.Fatal(err)
		}
		var b struct{ Contents []json.RawMessage }
		if err := json.Unmarshal(srv.Requests()[i+1].Body, &b); err != nil {
			t.Fatal(err)
		}
		if len(b.Contents) < 2 || string(b.Contents[1]) != want {
			t.Fatalf("request %d: contents %s\nwant the model turn as sent:\n%s", i+1, b.Contents, want)
		}
	}
}

// /status shows the provider's rate limits as its last response gave them.
func TestStatusRateLimits(t *testing.T) {
	f := newFixture(t, `[]`)
	srv := modeltest.NewServer(t, parseScript(t, `[{"text":"hi"}]`))
	srv.SetHeader("x-ratelimit-limit-requests", "500")
	srv.SetHeader("x-ratelimit-remaining-requests", "499")
	prov := responses.New(responses.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	f.opts.Profiles = func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: prov}, nil }
	s, err := f.host(t).Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Status(); !strings.Contains(got, "Rate limits: 499 of 500 requests left\n") {
		t.Fatalf("status:\n%s", got)
	}
}

// A profile's rate limits are the account's: a session that has not
// called the model yet shows what another session on the profile was
// told.
func TestStatusRateLimitsOfTheProfile(t *testing.T) {
	f := newFixture(t, `[]`)
	srv := modeltest.NewServer(t, parseScript(t, `[{"text":"hi"}]`))
	srv.SetHeader("x-ratelimit-limit-tokens", "1000")
	srv.SetHeader("x-ratelimit-remaining-tokens", "10")
	book := &model.RateBook{}
	prov := model.WithRateBook(responses.New(responses.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}), book)
	f.opts.Profiles = func(string) (host.Profile, error) {
		return host.Profile{Name: "test", Provider: prov, RateLimits: book.Last}, nil
	}
	h := f.host(t)
	first, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	second, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(second.Status(), "Rate limits") {
		t.Fatal("rate limits before any call")
	}
	if _, err := first.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if got := second.Status(); !strings.Contains(got, "Rate limits: 10 of 1000 tokens left\n") {
		t.Fatalf("status of the other session:\n%s", got)
	}
}
