package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/model/script"
)

// /status on every front door: the level first, the instruction files
// the prompt loaded, and the tokens the log records; no model call.
func TestStatus(t *testing.T) {
	f := newFixture(t, `[{"text":"hello","usage":{"input_tokens":12,"output_tokens":5,"cost":0.25}}]`)
	h := f.host(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be brief.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	got := s.Status()
	if !strings.HasPrefix(got, "Permission: read\n") {
		t.Errorf("status does not open with the level:\n%s", got)
	}
	for _, want := range []string{"Profile: test", "Compactions: 0", "Instructions: " + filepath.Join(dir, "AGENTS.md"), "Tokens: 12 input, 5 output", "Cost: $0.2500 estimated"} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
	if n := len(f.prov.Requests()); n != 1 {
		t.Errorf("%d model requests, want the turn's only", n)
	}
}

// /status says when a session's calls moved to a fallback profile.
func TestStatusOnFallback(t *testing.T) {
	f := newFixture(t, `[{"error":{"status":429,"body":"slow down"}}]`)
	backup, err := script.Parse([]byte(`{"rounds":[{"text":"from the fallback"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fb := model.NewFallback([]model.Profile{{Name: "test", Provider: f.prov}, {Name: "spare", Provider: script.New(backup)}})
	f.opts.Profiles = func(string) (host.Profile, error) { return host.Profile{Name: "test", Provider: fb}, nil }
	s, err := f.host(t).Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil || res.Reply != "from the fallback" {
		t.Fatalf("%+v %v", res, err)
	}
	if got := s.Status(); !strings.Contains(got, "Profile: test, on its fallback spare since a failure") {
		t.Fatalf("status:\n%s", got)
	}
}
