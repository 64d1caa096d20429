package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A workspace's .claude/settings.json hooks run only once `meka trust`
// trusts it: before, a notice lists them; after, a PreToolUse guard that
// exits 2 refuses the call and the run is a row of the session. Hooks in
// ~/.claude/settings.json run without trust.
func TestHooksTrustEndToEnd(t *testing.T) {
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test")
	home := strings.TrimPrefix(env[0], "HOME=")
	writeHookFile(t, filepath.Join(work, ".claude", "hooks", "guard.sh"), `#!/bin/sh
cat > "$CLAUDE_PROJECT_DIR/guard-stdin.json"
echo "no shell here" >&2
exit 2
`)
	writeHookFile(t, filepath.Join(work, ".claude", "settings.json"), `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}
    ]
  }
}`)
	writeHookFile(t, filepath.Join(home, ".claude", "settings.json"), `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"touch \"$MEKA_PROJECT_DIR/stopped\""}]}],
		"SessionEnd":[{"hooks":[{"type":"command","command":"touch \"$MEKA_PROJECT_DIR/ended\""}]}]}}`)

	turn := func() (string, string, int, *modeltest.Server) {
		s, err := script.Parse([]byte(`{"rounds":[
			{"tool_calls":[{"id":"c1","name":"shell_execute","arguments":{"command":"echo hi"}}]},
			{"text":"done."}]}`))
		if err != nil {
			t.Fatal(err)
		}
		srv := modeltest.NewServer(t, s)
		out, errOut, code := run(t, work, append(env, "OPENAI_BASE_URL="+srv.URL+"/v1"), "--oneshot", "--permission", "unrestricted", "go")
		return out, errOut, code, srv
	}

	_, errOut, code, _ := turn()
	if code != 0 || !strings.Contains(errOut, "not trusted") || !strings.Contains(errOut, "guard.sh") {
		t.Fatalf("untrusted: code %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "guard-stdin.json")); err == nil {
		t.Fatal("an untrusted workspace's hook ran")
	}
	if _, err := os.Stat(filepath.Join(work, "ended")); err != nil {
		t.Fatalf("the SessionEnd hook did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(work, "stopped")); err != nil {
		t.Fatalf("the home settings' Stop hook did not run: %v (stderr %q)", err, errOut)
	}

	out, errOut, code := run(t, work, env, "trust", work)
	if code != 0 || !strings.Contains(out, "trusted") {
		t.Fatalf("trust: code %d %q %q", code, out, errOut)
	}
	list, _, _ := run(t, work, env, "trust", "--list")
	if real, _ := filepath.EvalSymlinks(work); strings.TrimSpace(list) != real {
		t.Fatalf("trust --list = %q", list)
	}

	_, errOut, code, srv := turn()
	if code != 0 {
		t.Fatalf("trusted: code %d stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(work, "guard-stdin.json")); err != nil {
		t.Fatalf("the trusted workspace's hook did not run: stderr %q", errOut)
	}
	if reqs := srv.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "no shell here") {
		t.Fatalf("the model was not told the hook's reason")
	}
	if !strings.Contains(errOut, "Hook PreToolUse (Bash)") {
		t.Errorf("stderr does not show the hook run: %q", errOut)
	}

	lines, _, _ := run(t, work, env, "sessions", "list")
	id := strings.Fields(strings.Split(lines, "\n")[1])[0]
	js, _, _ := run(t, work, env, "sessions", "show", "--json", id)
	if !strings.Contains(js, `"kind":"hook"`) || !strings.Contains(js, `"decision":"block"`) || !strings.Contains(js, `"event":"SessionEnd"`) {
		t.Fatalf("no hook row in the session: %s", js)
	}

	if out, _, code := run(t, work, env, "trust", "--revoke", work); code != 0 || !strings.Contains(out, "no longer trusted") {
		t.Fatalf("revoke: %d %q", code, out)
	}
	if list, _, _ := run(t, work, env, "trust", "--list"); strings.TrimSpace(list) != "" {
		t.Fatalf("after revoke: %q", list)
	}
}

func writeHookFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// meka's own [hooks] table has Claude Code's shape in TOML; a malformed
// one is refused naming the file, the line and the key.
func TestConfigHooksEndToEnd(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"text":"never"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	home := strings.TrimPrefix(env[0], "HOME=")
	cfgFile := filepath.Join(home, "config", "meka", "config.toml")
	writeHookFile(t, cfgFile, `
[[hooks.UserPromptSubmit]]
[[hooks.UserPromptSubmit.hooks]]
type = "command"
command = "echo 'ask in the team channel instead' >&2; exit 2"
timeout = 5
`)
	_, errOut, _ := run(t, t.TempDir(), env, "--oneshot", "deploy to prod")
	if !strings.Contains(errOut, "ask in the team channel instead") {
		t.Fatalf("stderr %q", errOut)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model requests for a refused prompt", n)
	}

	// The second entry is the bad one: the error names its line, 6.
	writeHookFile(t, cfgFile, `
[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "command"
command = "true"
[[hooks.Stop]]
[[hooks.Stop.hooks]]
type = "prompt"
prompt = "is it done?"
`)
	_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "hi")
	if code == 0 || !strings.Contains(errOut, cfgFile+":6:") || !strings.Contains(errOut, "hooks.Stop[1].hooks[0].type") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
}

// Over HTTP, /v1/sessions/{id}/hooks lists what runs and what does not
// (an untrusted workspace's), and each run is hook.finished on the feed.
func TestHooksServeEndToEnd(t *testing.T) {
	work := t.TempDir()
	sc, err := script.Parse([]byte(`{"rounds":[{"text":"done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	model := modeltest.NewServer(t, sc)
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+model.URL+"/v1")
	home := strings.TrimPrefix(env[0], "HOME=")
	writeHookFile(t, filepath.Join(home, ".claude", "settings.json"), `{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo 'It is Tuesday.'","timeout":10}]}]}}`)
	writeHookFile(t, filepath.Join(work, ".claude", "settings.json"), `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"exit 2"}]}]}}`)
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	var list struct {
		Items []struct {
			Event, Command, Source, Why string
			Active                      bool
		}
	}
	if code := srv.call(t, "GET", "/v1/sessions/"+rec.ID+"/hooks", nil, &list); code != 200 || len(list.Items) != 2 {
		t.Fatalf("hooks: %d %+v", code, list)
	}
	if a, b := list.Items[0], list.Items[1]; !a.Active || a.Event != "UserPromptSubmit" || b.Active || b.Event != "Stop" || !strings.Contains(b.Why, "not trusted") {
		t.Fatalf("hooks = %+v", list.Items)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	feed := srv.events(t, ctx, rec.ID, "0")
	if code := srv.call(t, "POST", "/v1/sessions/"+rec.ID+"/turns",
		map[string]any{"input": []map[string]string{{"type": "text", "text": "what day is it?"}}}, nil); code != 202 {
		t.Fatalf("turn: %d", code)
	}
	hooked := false
	for f := range feed {
		hooked = hooked || f.typ == "hook.finished"
		if f.typ == "turn.completed" {
			break
		}
	}
	if !hooked {
		t.Fatal("no hook.finished on the feed")
	}
	if reqs := model.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "It is Tuesday.") {
		t.Fatal("the hook's context did not reach the model")
	}
}
