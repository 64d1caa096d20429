package hooks_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// stdinOf reads what a hook saved of its stdin.
func stdinOf(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("stdin %q: %v", b, err)
	}
	return m
}

// A PreToolUse hook that exits 2 refuses the call with its stderr, as in
// Claude Code's documented Bash guard; it reads Claude Code's stdin.
func TestPreToolUseExit2Blocks(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.script("guard.sh", `cat > "$CLAUDE_PROJECT_DIR/stdin.json"
echo "$MEKA_PROJECT_DIR" > "$CLAUDE_PROJECT_DIR/env.txt"
echo "rm -rf is not allowed here" >&2
exit 2
`)
	h.settings(`{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh",
            "timeout": 30
          }
        ]
      }
    ]
  }
}`)
	h.run(hooks.Options{}, "clean up")
	if got := h.shell.commands(); len(got) != 0 {
		t.Fatalf("the blocked command ran: %q", got)
	}
	res := h.results()
	if len(res) != 1 || res[0].Status != session.StatusRefused || !strings.Contains(resultText(res[0]), "rm -rf is not allowed here") {
		t.Fatalf("results = %+v, want one refused with the hook's stderr", res)
	}
	in := stdinOf(t, filepath.Join(h.dir, "stdin.json"))
	if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Bash" || in["session_id"] != h.id || in["cwd"] != h.dir || in["tool_use_id"] != "c1" {
		t.Errorf("stdin = %v", in)
	}
	if ti, _ := in["tool_input"].(map[string]any); ti["command"] != "rm -rf /tmp/x" {
		t.Errorf("tool_input = %v", in["tool_input"])
	}
	if env, _ := os.ReadFile(filepath.Join(h.dir, "env.txt")); strings.TrimSpace(string(env)) != h.dir {
		t.Errorf("MEKA_PROJECT_DIR = %q, want %q", env, h.dir)
	}
	runs := h.hookRuns()
	if len(runs) != 1 || runs[0].Event != "PreToolUse" || runs[0].Exit != 2 || runs[0].Decision != "block" ||
		runs[0].Tool != "Bash" || runs[0].CallID != "c1" || runs[0].Source != filepath.Join(h.dir, ".claude", "settings.json") {
		t.Fatalf("hook rows = %+v", runs)
	}
}

// A matcher in meka's spelling matches meka's tool and reports meka's
// name; a JSON deny refuses with its reason.
func TestPreToolUseJSONDeny(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.script("deny.sh", `cat > "$CLAUDE_PROJECT_DIR/stdin.json"
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"writes under vendor/ are not allowed"}}'
`)
	h.settings(settingsFor("PreToolUse", "shell_.*", `"$CLAUDE_PROJECT_DIR"/.claude/hooks/deny.sh`))
	h.run(hooks.Options{}, "go")
	if len(h.shell.commands()) != 0 {
		t.Fatal("a denied call ran")
	}
	if res := h.results(); res[0].Status != session.StatusRefused || !strings.Contains(resultText(res[0]), "vendor/") {
		t.Fatalf("result = %+v", res[0])
	}
	if in := stdinOf(t, filepath.Join(h.dir, "stdin.json")); in["tool_name"] != "shell_execute" {
		t.Errorf("tool_name = %v, want the name the matcher matched", in["tool_name"])
	}
	if r := h.hookRuns()[0]; r.Decision != "deny" || r.Reason != "writes under vendor/ are not allowed" {
		t.Errorf("row = %+v", r)
	}
}

// updatedInput replaces the call's arguments; allow leaves the decision
// to meka's level; additionalContext reaches the model with the result.
func TestPreToolUseUpdatedInput(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.settings(settingsFor("PreToolUse", "Bash", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"command":"ls"},"additionalContext":"the repo is clean"}}'`))
	h.run(hooks.Options{}, "go")
	if got := h.shell.commands(); len(got) != 1 || got[0] != "ls" {
		t.Fatalf("ran %q, want the updated input", got)
	}
	if txt := resultText(h.results()[0]); !strings.Contains(txt, "ran ls") || !strings.Contains(txt, "the repo is clean") {
		t.Fatalf("result = %q", txt)
	}
	if r := h.hookRuns()[0]; r.Decision != "allow" {
		t.Errorf("row = %+v", r)
	}
}

// An updatedInput the tool's schema refuses refuses the call whole.
func TestPreToolUseUpdatedInputInvalid(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.settings(settingsFor("PreToolUse", "Bash", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"cmd":"ls"}}}'`))
	h.run(hooks.Options{}, "go")
	if len(h.shell.commands()) != 0 {
		t.Fatal("ran with arguments its schema refuses")
	}
	if r := h.results()[0]; r.Status != session.StatusRefused || !strings.Contains(resultText(r), "schema") {
		t.Fatalf("result = %+v", r)
	}
}

// "ask" puts the call to a person even though the level allows it: with
// approvals off it is refused, never run.
func TestPreToolUseAskWithoutApprovals(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.gate = &tool.Gate{Level: func() permission.Level { return permission.Unrestricted }}
	h.settings(settingsFor("PreToolUse", "Bash", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"touches prod"}}'`))
	h.run(hooks.Options{}, "go")
	if len(h.shell.commands()) != 0 {
		t.Fatal("an ask ran without approval")
	}
	if r := h.results()[0]; r.Status != session.StatusRefused || !strings.Contains(resultText(r), "touches prod") {
		t.Fatalf("result = %+v", r)
	}
}

// Any other exit status is a non-blocking error: the call runs and a
// notice says the hook failed.
func TestNonBlockingError(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.settings(settingsFor("PreToolUse", "", `echo oops >&2; exit 1`))
	h.run(hooks.Options{}, "go")
	if len(h.shell.commands()) != 1 {
		t.Fatal("a failing hook blocked the call")
	}
	ns := h.notices()
	if len(ns) != 1 || !strings.Contains(ns[0].Title, "exit status 1") || !strings.Contains(ns[0].Description, "oops") {
		t.Fatalf("notices = %+v", ns)
	}
	if r := h.hookRuns()[0]; r.Decision != "error" || r.Exit != 1 {
		t.Errorf("row = %+v", r)
	}
}

// PostToolUse sees the response; a block tells the model the reason with
// the result, and additionalContext rides along.
func TestPostToolUse(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.script("post.sh", `cat > "$CLAUDE_PROJECT_DIR/stdin.json"
echo '{"decision":"block","reason":"lint failed: fix main.go","hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"3 warnings"}}'
`)
	h.settings(settingsFor("PostToolUse", "Edit|Write|Bash", `"$CLAUDE_PROJECT_DIR"/.claude/hooks/post.sh`))
	h.run(hooks.Options{}, "go")
	if len(h.shell.commands()) != 1 {
		t.Fatal("the call did not run")
	}
	txt := resultText(h.results()[0])
	if !strings.Contains(txt, "ran rm") || !strings.Contains(txt, "lint failed: fix main.go") || !strings.Contains(txt, "3 warnings") {
		t.Fatalf("result = %q", txt)
	}
	in := stdinOf(t, filepath.Join(h.dir, "stdin.json"))
	resp, _ := in["tool_response"].(map[string]any)
	if in["hook_event_name"] != "PostToolUse" || resp["text"] != "ran rm -rf /tmp/x" || resp["is_error"] != false {
		t.Fatalf("stdin = %v", in)
	}
	// The row follows the result it is about.
	rows := h.rows()
	for i, r := range rows {
		if _, ok := r.Entry.(session.HookRun); ok {
			if tr, ok := rows[i-1].Entry.(session.ToolResult); !ok || tr.CallID != "c1" {
				t.Fatalf("hook row after %T, want the call's result", rows[i-1].Entry)
			}
		}
	}
}

// "continue": false stops the turn with stopReason shown to the person.
func TestContinueFalseStopsTurn(t *testing.T) {
	h := newHarness(t, bashCall, done)
	h.settings(settingsFor("PostToolUse", "", `echo '{"continue":false,"stopReason":"build broken"}'`))
	res := h.run(hooks.Options{}, "go")
	if res.Stop != agent.StopHook {
		t.Fatalf("stop = %q, want %q", res.Stop, agent.StopHook)
	}
	if h.prov.Remaining() != 1 {
		t.Fatal("the model was called after the hook stopped the turn")
	}
	found := false
	for _, n := range h.notices() {
		found = found || n.Description == "build broken"
	}
	if !found {
		t.Fatalf("notices = %+v", h.notices())
	}
}

// UserPromptSubmit: exit 2 refuses the prompt with the reason, and the
// prompt is not stored; plain stdout is context for the model.
func TestUserPromptSubmit(t *testing.T) {
	t.Run("block", func(t *testing.T) {
		h := newHarness(t, done)
		h.settings(settingsFor("UserPromptSubmit", "", `grep -q password && { echo "prompts must not contain secrets" >&2; exit 2; }; exit 0`))
		res := h.run(hooks.Options{}, "my password is hunter2")
		if res.Stop != agent.StopPromptRefused {
			t.Fatalf("stop = %q", res.Stop)
		}
		for _, r := range h.rows() {
			if _, ok := r.Entry.(session.UserMessage); ok {
				t.Fatal("the refused prompt was stored")
			}
		}
		if ns := h.notices(); len(ns) != 1 || ns[0].Description != "prompts must not contain secrets" {
			t.Fatalf("notices = %+v", ns)
		}
		if h.prov.Remaining() != 1 {
			t.Fatal("the model was called")
		}
	})
	t.Run("context", func(t *testing.T) {
		h := newHarness(t, done)
		h.script("ctx.sh", `cat > "$CLAUDE_PROJECT_DIR/stdin.json"; echo "Current branch: main"`)
		h.settings(settingsFor("UserPromptSubmit", "", `"$CLAUDE_PROJECT_DIR"/.claude/hooks/ctx.sh`))
		h.run(hooks.Options{}, "hello")
		if in := stdinOf(t, filepath.Join(h.dir, "stdin.json")); in["prompt"] != "hello" || in["hook_event_name"] != "UserPromptSubmit" {
			t.Fatalf("stdin = %v", in)
		}
		req := h.prov.Requests()[0]
		if !strings.Contains(requestText(req), "Current branch: main") {
			t.Fatalf("the model was not sent the hook's context: %s", requestText(req))
		}
	})
}

func requestText(req *model.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Text())
	}
	return b.String()
}

// SessionStart runs as the session's engine takes its first prompt:
// "startup" for a new session, "resume" for one with turns; its plain
// stdout is context for the model.
func TestSessionStart(t *testing.T) {
	h := newHarness(t, done, done)
	h.settings(`{"hooks":{"SessionStart":[{"matcher":"startup|resume","hooks":[{"type":"command","command":"cat >> \"$CLAUDE_PROJECT_DIR/start.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/start.jsonl\"; echo 'Open issues: 3'"}]}]}}`)
	h.run(hooks.Options{Model: "m1"}, "one")
	if !strings.Contains(requestText(h.prov.Requests()[0]), "Open issues: 3") {
		t.Fatal("SessionStart's stdout did not reach the model")
	}
	h.run(hooks.Options{Model: "m1"}, "two") // a new engine over the same rows: a resume
	b, err := os.ReadFile(filepath.Join(h.dir, "start.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"source":"startup"`) || !strings.Contains(lines[1], `"source":"resume"`) || !strings.Contains(lines[0], `"model":"m1"`) {
		t.Fatalf("stdin lines = %q", lines)
	}
	if runs := h.hookRuns(); len(runs) != 2 || runs[0].Event != "SessionStart" {
		t.Fatalf("runs = %+v", runs)
	}
}

// PreCompact runs while the engine compacts; its row is stored before the
// next request.
func TestPreCompact(t *testing.T) {
	dir := t.TempDir()
	set, err := hooks.Discover(hooks.Sources{Config: mustSettings(t, `{"hooks":{"PreCompact":[{"matcher":"auto","hooks":[{"type":"command","command":"cat > stdin.json"}]}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	hk := hooks.New(hooks.Options{Set: set, Runner: runner(dir), SessionID: "s"})
	x := hk.Extension()
	if len(x.Compactors) != 1 || len(x.Recorders) != 1 || len(x.Guards) != 0 {
		t.Fatalf("extension = %+v", x)
	}
	if txt := x.Compactors[0].CompactionText(t.Context()); txt != "" {
		t.Fatalf("summary text %q", txt)
	}
	rows := x.Recorders[0].RecordTools(t.Context(), agent.RequestInfo{})
	if len(rows) != 1 || rows[0].(session.HookRun).Event != "PreCompact" {
		t.Fatalf("rows = %+v", rows)
	}
	if again := x.Recorders[0].RecordTools(t.Context(), agent.RequestInfo{}); len(again) != 0 {
		t.Fatal("rows stored twice")
	}
	if in := stdinOf(t, filepath.Join(dir, "stdin.json")); in["trigger"] != "auto" || in["hook_event_name"] != "PreCompact" {
		t.Fatalf("stdin = %v", in)
	}
}

// Notification runs beside an approval waiting for a person; SessionEnd
// as the session closes, which stores every row not stored yet.
func TestNotificationAndSessionEnd(t *testing.T) {
	dir := t.TempDir()
	set, err := hooks.Discover(hooks.Sources{Config: mustSettings(t, `{"hooks":{
		"Notification":[{"matcher":"permission_prompt","hooks":[{"type":"command","command":"cat > note.json"}]}],
		"SessionEnd":[{"hooks":[{"type":"command","command":"cat > end.json"}]}]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	x := hooks.New(hooks.Options{Set: set, Runner: runner(dir), SessionID: "s"}).Extension()
	if len(x.Approvals) != 1 || len(x.Closers) != 1 || len(x.Recorders) != 1 {
		t.Fatalf("extension = %+v", x)
	}
	ctx, answered := context.WithCancel(t.Context())
	x.Approvals[0](ctx, permission.Request{Tool: "shell_execute", CallID: "c9"})
	answered() // the person answers at once: the hook still runs to its end
	rows := x.Closers[0](t.Context())
	if len(rows) != 2 || rows[0].(session.HookRun).Event != "Notification" || rows[0].(session.HookRun).Exit != 0 ||
		rows[1].(session.HookRun).Event != "SessionEnd" {
		t.Fatalf("rows = %+v", rows)
	}
	if in := stdinOf(t, filepath.Join(dir, "note.json")); in["notification_type"] != "permission_prompt" || !strings.Contains(in["message"].(string), "shell_execute") {
		t.Fatalf("stdin = %v", in)
	}
	if in := stdinOf(t, filepath.Join(dir, "end.json")); in["reason"] != "other" || in["hook_event_name"] != "SessionEnd" {
		t.Fatalf("stdin = %v", in)
	}
}
