package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A newcomer's first commands: mistakes are refused before anything is
// sent or stored, prompts still work unquoted.

func TestMistypedCommandIsRefused(t *testing.T) {
	srv := serve(t, `[{"text":"one"},{"text":"two"},{"text":"three"}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	for _, tc := range []struct {
		args  []string
		meant string
	}{
		{[]string{"sesions", "list"}, "meka sessions"},
		{[]string{"schedul"}, "meka schedule"},
		{[]string{"version"}, "meka --version"},
		{[]string{"config"}, "meka --config FILE"},
		{[]string{"--oneshot", "sessoins", "show", "x"}, "meka sessions"},
		{[]string{"acd"}, "meka acp"},
	} {
		_, errOut, code := run(t, work, env, tc.args...)
		if code != 2 || !strings.Contains(errOut, "unknown command") || !strings.Contains(errOut, "did you mean "+tc.meant) {
			t.Errorf("meka %q: code %d stderr %q", tc.args, code, errOut)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests reached the model", n)
	}
	if list, _, _ := run(t, work, env, "sessions", "list", "--all"); !strings.Contains(list, "no sessions") {
		t.Fatalf("a refused command stored a session: %q", list)
	}

	// Several words are a prompt, even when the first is near a short
	// command name (add ~ acp), and -- forces a prompt.
	for _, args := range [][]string{
		{"--oneshot", "add", "a", "test", "for", "the", "parser"},
		{"--oneshot", "--", "version"},
		{"--oneshot", "hello", "there"},
	} {
		out, errOut, code := run(t, work, env, args...)
		if code != 0 || out == "" {
			t.Errorf("meka %q: code %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[0].Body), "add a test for the parser") || !strings.Contains(string(reqs[1].Body), `"version"`) {
		t.Fatalf("requests: %d", len(reqs))
	}
}

func TestProviderFlag(t *testing.T) {
	srv := serve(t, `[{"text":"from anthropic"}]`)
	work := t.TempDir()

	// --provider anthropic is the Anthropic profile from the environment,
	// even when OPENAI_API_KEY would be the zero-config default.
	env := isolatedEnv(t, "OPENAI_API_KEY=o", "OPENAI_BASE_URL=http://127.0.0.1:1/v1", "ANTHROPIC_API_KEY=a", "ANTHROPIC_BASE_URL="+srv.URL)
	out, errOut, code := run(t, work, env, "--provider", "anthropic", "--oneshot", "hi")
	if code != 0 || out != "from anthropic\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Path != "/v1/messages" {
		t.Fatalf("requests %+v", reqs)
	}

	// An empty key variable is a configuration problem: exit 2, nothing stored.
	env = isolatedEnv(t, "OPENAI_API_KEY=o")
	_, errOut, code = run(t, work, env, "--provider", "anthropic", "--oneshot", "hi")
	if code != 2 || !strings.Contains(errOut, "ANTHROPIC_API_KEY is empty") {
		t.Fatalf("empty key: code %d stderr %q", code, errOut)
	}
	_, errOut, code = run(t, work, env, "--provider", "gemini", "--oneshot", "hi")
	if code != 2 || !strings.Contains(errOut, `unknown profile "gemini"`) {
		t.Fatalf("unknown provider: code %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(envValue(env, "MEKA_DATA_DIR"), "meka.db")); !os.IsNotExist(err) {
		t.Fatalf("a refused run created the database: %v", err)
	}

	// --provider also names a configured profile: seed 004's own example,
	// meka --oneshot --permission read --provider work.
	workCfg := filepath.Join(t.TempDir(), "config.toml")
	srv2 := serve(t, `[{"text":"from work"}]`)
	os.WriteFile(workCfg, []byte("default_profile = \"other\"\n[profiles.work]\nprovider = \"anthropic\"\nbase_url = \""+srv2.URL+"\"\napi_key_env = \"WORK_KEY\"\n"+
		"[profiles.other]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n"), 0o600)
	out, errOut, code = run(t, work, isolatedEnv(t, "MEKA_CONFIG="+workCfg, "WORK_KEY=w"), "--oneshot", "--permission", "read", "--provider", "work", "summarise today's alerts")
	if code != 0 || out != "from work\n" {
		t.Fatalf("--provider work: code %d stdout %q stderr %q", code, out, errOut)
	}
	if _, errOut, code = run(t, work, isolatedEnv(t, "MEKA_CONFIG="+workCfg, "WORK_KEY=w"), "--provider", "work", "--profile", "other", "--oneshot", "hi"); code != 2 || !strings.Contains(errOut, "name different profiles") {
		t.Fatalf("--provider and --profile disagreeing: code %d stderr %q", code, errOut)
	}

	// A configured profile whose key variable is empty: exit 2 as well.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[profiles.c]\nprovider = \"anthropic\"\napi_key_env = \"MY_KEY\"\n"), 0o600)
	_, errOut, code = run(t, work, isolatedEnv(t, "MEKA_CONFIG="+cfg), "--oneshot", "hi")
	if code != 2 || !strings.Contains(errOut, "MY_KEY is empty") {
		t.Fatalf("configured profile: code %d stderr %q", code, errOut)
	}
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == key {
			return v
		}
	}
	return ""
}

func TestContinueWithoutSession(t *testing.T) {
	env := configured(t, serve(t, `[]`), "")
	work := t.TempDir()
	_, errOut, code := run(t, work, env, "-c")
	if code != 1 || strings.Count(errOut, "no session in ") != 1 || !strings.Contains(errOut, "start one with meka") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

func TestSessionsListEmptyAndJSON(t *testing.T) {
	srv := serve(t, `[{"text":"hi"}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	out, _, code := run(t, work, env, "sessions", "list")
	if code != 0 || !strings.Contains(out, "no sessions in ") || !strings.Contains(out, "--all") {
		t.Fatalf("empty list: code %d %q", code, out)
	}
	if _, errOut, code := run(t, work, env, "--oneshot", "hello"); code != 0 {
		t.Fatalf("oneshot: %d %s", code, errOut)
	}
	out, _, code = run(t, work, env, "sessions", "list", "--json")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("json: code %d %q", code, out)
	}
	checkSnake(t, doc)
	if ss, _ := doc["sessions"].([]any); len(ss) != 1 {
		t.Fatalf("sessions: %q", out)
	}
}

// checkSnake fails on any object key that is not snake_case.
func checkSnake(t *testing.T, v any) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k != strings.ToLower(k) || strings.Contains(k, "-") {
				t.Errorf("key %q is not snake_case", k)
			}
			checkSnake(t, e)
		}
	case []any:
		for _, e := range v {
			checkSnake(t, e)
		}
	}
}

func TestHelpNamesEnvironmentAndExitCodes(t *testing.T) {
	env := isolatedEnv(t)
	out, _, code := run(t, t.TempDir(), env, "--help")
	for _, want := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MEKA_MODEL", "MEKA_CONFIG", "MEKA_DATA_DIR", "Exit status", "130"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("meka --help lacks %q", want)
		}
	}
	out, _, _ = run(t, t.TempDir(), env, "schedule", "--help")
	for _, want := range []string{"meka acp", "meka serve", "the terminal", "meka --oneshot"} {
		if !strings.Contains(out, want) {
			t.Errorf("meka schedule --help lacks %q:\n%s", want, out)
		}
	}
}
