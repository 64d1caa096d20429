package hooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/hooks"
)

// A settings file as teams keep them for Claude Code: other settings
// beside hooks, events meka does not fire, several entries, a matcher-less
// event, timeouts in seconds.
const claudeSettings = `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "jq -r '.tool_input.command' >> ~/.claude/bash-command-log.txt"}]},
      {"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect.py", "timeout": 5}]}
    ],
    "PostToolUse": [
      {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier --write \"$(jq -r '.tool_input.file_path')\""}]}
    ],
    "Notification": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send 'Claude Code' 'Awaiting your input'"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh"}]}],
    "PermissionDenied": [{"hooks": [{"type": "command", "command": "true"}]}]
  }
}`

func TestParseClaudeSettings(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), claudeSettings)
	set, err := hooks.Discover(hooks.Sources{Workspace: dir})
	if err != nil {
		t.Fatal(err)
	}
	all := set.All()
	if len(all) != 5 {
		t.Fatalf("%d hooks, want 5 (PermissionDenied is not an event meka fires): %+v", len(all), all)
	}
	for _, h := range all {
		if !h.Workspace || h.Source != filepath.Join(dir, ".claude", "settings.json") {
			t.Errorf("hook %+v: want a workspace hook from its file", h)
		}
	}
	cases := []struct {
		event, tool string
		want        []string // the names the matches report
	}{
		{hooks.PreToolUse, "shell_execute", []string{"Bash"}},
		{hooks.PreToolUse, "file_edit", []string{"Edit"}},
		{hooks.PreToolUse, "file_write", []string{"Write"}},
		{hooks.PreToolUse, "file_read", nil},
		{hooks.PreToolUse, "mcp__github__create_issue", nil},
		{hooks.PostToolUse, "file_write", []string{"Write"}},
		{hooks.Notification, "permission_prompt", []string{"permission_prompt"}},
		{hooks.Stop, "", []string{""}},
	}
	for _, c := range cases {
		var got []string
		for _, m := range set.Match(c.event, c.tool) {
			got = append(got, m.Name)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("Match(%s, %s) = %q, want %q", c.event, c.tool, got, c.want)
		}
	}
	if m := set.Match(hooks.PreToolUse, "file_edit"); m[0].Timeout != 5*time.Second {
		t.Errorf("timeout = %s", m[0].Timeout)
	}
	if m := set.Match(hooks.PreToolUse, "shell_execute"); m[0].Timeout != hooks.DefaultTimeout {
		t.Errorf("default timeout = %s", m[0].Timeout)
	}
}

// Matchers are anchored regular expressions over meka's and Claude
// Code's names; MCP tools match as they are named.
func TestMatchers(t *testing.T) {
	set, err := hooks.Discover(hooks.Sources{Config: mustSettings(t, `{"hooks":{"PreToolUse":[
		{"matcher":"Edit","hooks":[{"type":"command","command":"a"}]},
		{"matcher":"mcp__github__.*","hooks":[{"type":"command","command":"b"}]},
		{"matcher":"Notebook.*","hooks":[{"type":"command","command":"c"}]},
		{"matcher":"*","hooks":[{"type":"command","command":"d"}]},
		{"matcher":"Glob|Grep|Task|Read","hooks":[{"type":"command","command":"e"}]}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	cmds := func(tool string) string {
		var out []string
		for _, m := range set.Match(hooks.PreToolUse, tool) {
			out = append(out, m.Command+"="+m.Name)
		}
		return strings.Join(out, " ")
	}
	for tool, want := range map[string]string{
		"file_edit":                 "a=Edit d=Edit",
		"NotebookEdit":              "c=NotebookEdit d=NotebookEdit",
		"mcp__github__create_issue": "b=mcp__github__create_issue d=mcp__github__create_issue",
		"file_find":                 "d=Glob e=Glob",
		"file_search":               "d=Grep e=Grep",
		"agent_spawn":               "d=Task e=Task",
		"file_read":                 "d=Read e=Read",
		"plan_update":               "d=plan_update",
	} {
		if got := cmds(tool); got != want {
			t.Errorf("%s: %q, want %q", tool, got, want)
		}
	}
}

// meka's [hooks] table has the same shape in TOML; confine is meka's key,
// at the top, on an entry or on one hook.
func TestFromConfig(t *testing.T) {
	s, err := hooks.FromConfig("config.toml", map[string]any{
		"confine": true,
		"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{
			map[string]any{"type": "command", "command": "guard", "timeout": int64(3)},
			map[string]any{"type": "command", "command": "notify", "confine": false},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := hooks.Discover(hooks.Sources{Config: s, ConfigFile: "config.toml"})
	if err != nil {
		t.Fatal(err)
	}
	ms := set.Match(hooks.PreToolUse, "shell_execute")
	if len(ms) != 2 || !ms[0].Confine || ms[1].Confine || ms[0].Timeout != 3*time.Second || ms[0].Source != "config.toml" || ms[0].Workspace {
		t.Fatalf("matches = %+v", ms)
	}
}

func TestBadSettings(t *testing.T) {
	for _, c := range []struct{ js, want string }{
		{`{"hooks":{"PreToolUse":[{"matcher":"(","hooks":[]}]}}`, "hooks.PreToolUse[0].matcher"},
		{`{"hooks":{"Stop":[{"hooks":[{"type":"prompt","prompt":"x"}]}]}}`, `only "command" hooks`},
		{`{"hooks":{"Stop":[{"hooks":[{"type":"command"}]}]}}`, "command: empty"},
		{`{"hooks":{"Stop":{"hooks":[]}}}`, "want an array"},
		{`{"hooks":`, "f.json"},
	} {
		_, err := hooks.ParseSettings("f.json", []byte(c.js))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f.json") {
			t.Errorf("%s: error %v, want one naming the file and %q", c.js, err, c.want)
		}
	}
}

// Every source is read and merged: meka's config, the person's
// ~/.claude/settings.json and the workspace's three files; a broken file
// is reported and the others still load.
func TestDiscoverMerges(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	one := func(cmd string) string {
		return `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"` + cmd + `"}]}]}}`
	}
	writeFile(t, filepath.Join(home, ".claude", "settings.json"), one("home"))
	writeFile(t, filepath.Join(ws, ".claude", "settings.json"), one("project"))
	writeFile(t, filepath.Join(ws, ".claude", "settings.local.json"), one("local"))
	writeFile(t, filepath.Join(ws, ".meka", "settings.json"), `{"hooks":`)
	set, err := hooks.Discover(hooks.Sources{Home: home, Workspace: ws, Config: mustSettings(t, one("config")), ConfigFile: "meka.toml"})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(ws, ".meka", "settings.json")) {
		t.Fatalf("err = %v, want the broken file named", err)
	}
	var got []string
	for _, h := range set.All() {
		got = append(got, h.Command)
	}
	if strings.Join(got, " ") != "config home project local" {
		t.Fatalf("hooks = %q", got)
	}
	if dropped := set.Untrust(); len(dropped) != 2 || dropped[0].Command != "project" {
		t.Fatalf("untrusted = %+v", dropped)
	}
	if ms := set.Match(hooks.Stop, ""); len(ms) != 2 {
		t.Fatalf("after Untrust %d Stop hooks, want the config's and home's", len(ms))
	}
}

func TestTrust(t *testing.T) {
	data, ws := t.TempDir(), t.TempDir()
	tr := hooks.Trust{Path: filepath.Join(data, hooks.TrustFile)}
	file := filepath.Join(ws, ".claude", "settings.json")
	writeFile(t, file, `{}`)
	if ok, why, err := tr.Trusted(ws, []string{file}, os.Getuid()); ok || err != nil || !strings.Contains(why, "meka trust") {
		t.Fatalf("untrusted: %v %q %v", ok, why, err)
	}
	if _, err := tr.Add(ws); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := tr.Trusted(ws, []string{file}, os.Getuid()); !ok || err != nil {
		t.Fatalf("trusted: %v %v", ok, err)
	}
	if list, _ := tr.List(); len(list) != 1 {
		t.Fatalf("list = %q", list)
	}
	// A file someone else owns revokes the trust.
	if ok, why, _ := tr.Trusted(ws, []string{file}, os.Getuid()+1); ok || !strings.Contains(why, "owned by another user") {
		t.Fatalf("other owner: %v %q", ok, why)
	}
	if was, err := tr.Revoke(ws); !was || err != nil {
		t.Fatalf("revoke: %v %v", was, err)
	}
	if ok, _, _ := tr.Trusted(ws, nil, os.Getuid()); ok {
		t.Fatal("trusted after revoke")
	}
}
