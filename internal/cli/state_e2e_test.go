package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// TestStateHiddenFromCommands runs the meka binary at read with a command
// that reads meka's serve token and config: both are masked, while a
// user skill's files and the session's own scratchpad, where the command
// before spilled its long output, stay readable.
func TestStateHiddenFromCommands(t *testing.T) {
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test")
	home := strings.TrimPrefix(env[0], "HOME=")
	data, conf := filepath.Join(home, "data"), filepath.Join(home, "config", "meka")
	for p, text := range map[string]string{
		filepath.Join(data, "serve.token"):                "token-secret-7f3a",
		filepath.Join(conf, "config.toml"):                "# config-secret-91c2\n",
		filepath.Join(conf, "skills", "demo", "SKILL.md"): "---\nname: demo\ndescription: a demo\n---\nrun run.sh\n",
		filepath.Join(conf, "skills", "demo", "run.sh"):   "echo skill-visible-55d0\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	call := func(id, command string) string {
		b, _ := json.Marshal(map[string]any{"tool_calls": []map[string]any{{"id": id, "name": "shell_execute", "arguments": map[string]string{"command": command}}}})
		return string(b)
	}
	rounds := strings.Join([]string{
		call("c1", "cat "+data+"/serve.token; cat "+conf+"/config.toml; ls "+data+"; cat "+conf+"/skills/demo/run.sh; seq 1 40000"),
		call("c2", "grep -h '^3999[0-9]$' "+data+"/sessions/*/scratch/* | tr '\\n' ,"),
		`{"text":"done"}`,
	}, ",")
	s, err := script.Parse([]byte(`{"rounds":[` + rounds + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env = append(env, "OPENAI_BASE_URL="+srv.URL+"/v1")
	out, errOut, code := run(t, work, env, "--oneshot", "--permission", "read", "look around")
	if code != 0 || out != "done\n" {
		t.Fatalf("oneshot: code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	first, second := string(reqs[1].Body), string(reqs[2].Body)
	if _, err := os.Stat(filepath.Join(data, "meka.db")); err != nil {
		t.Fatal(err)
	}
	// ls would list the database beside the token.
	for _, secret := range []string{"token-secret-7f3a", "config-secret-91c2", "meka.db"} {
		if strings.Contains(first, secret) || strings.Contains(second, secret) {
			t.Errorf("a read-level command saw %q", secret)
		}
	}
	if !strings.Contains(first, "skill-visible-55d0") {
		t.Errorf("a user skill's script was not readable: %.2000s", first)
	}
	if !strings.Contains(second, "39998,39999,") {
		t.Errorf("the session's own scratchpad was not readable: %.2000s", second)
	}
}
