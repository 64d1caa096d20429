package hooks_test

import (
	"context"
	"strings"
	"testing"

	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

func out(exit int, stdout, stderr string) hooks.Outcome {
	return hooks.Outcome{Match: hooks.Match{Hook: hooks.Hook{Command: "h", Source: "s"}, Name: "Bash"}, Exit: exit, Stdout: stdout, Stderr: stderr}
}

// Parallel hooks' decisions merge as the most restrictive: deny over ask
// over allow; reasons and context from every hook are kept.
func TestDecideMerges(t *testing.T) {
	pd := func(d, r string) string {
		return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + d + `","permissionDecisionReason":"` + r + `"}}`
	}
	d := hooks.Decide(hooks.PreToolUse, "c", []hooks.Outcome{out(0, pd("allow", "fine"), ""), out(0, pd("ask", "hmm"), "")})
	if d.Permission != hooks.Ask || d.Block || !strings.Contains(d.PermissionReason, "hmm") {
		t.Fatalf("allow+ask = %+v", d)
	}
	d = hooks.Decide(hooks.PreToolUse, "c", []hooks.Outcome{out(0, pd("ask", "hmm"), ""), out(0, pd("deny", "no"), ""), out(0, pd("allow", ""), "")})
	if d.Permission != hooks.Deny || !d.Block || d.Reason != "no" {
		t.Fatalf("ask+deny+allow = %+v", d)
	}
	// The deprecated spelling: approve and block.
	d = hooks.Decide(hooks.PreToolUse, "c", []hooks.Outcome{out(0, `{"decision":"block","reason":"old style"}`, "")})
	if !d.Block || d.Reason != "old style" {
		t.Fatalf("decision block = %+v", d)
	}
	// "defer" is treated as ask.
	if d := hooks.Decide(hooks.PreToolUse, "c", []hooks.Outcome{out(0, pd("defer", ""), "")}); d.Permission != hooks.Ask {
		t.Fatalf("defer = %+v", d)
	}
}

// systemMessage is a notice for the person; suppressOutput keeps stdout
// out of the row; on exit 2 stdout's JSON is ignored; text that is not
// JSON is context only for UserPromptSubmit and SessionStart.
func TestDecideOutputFields(t *testing.T) {
	d := hooks.Decide(hooks.PostToolUse, "c", []hooks.Outcome{out(0, `{"systemMessage":"formatted 2 files","suppressOutput":true}`, "")})
	if len(d.Notices) != 1 || d.Notices[0].Title != "formatted 2 files" || d.Notices[0].Severity != session.SeverityInfo || d.Runs[0].Stdout != "" {
		t.Fatalf("decision = %+v", d)
	}
	d = hooks.Decide(hooks.PreToolUse, "c", []hooks.Outcome{out(2, pd2("allow"), "blocked anyway")})
	if !d.Block || d.Permission != "" || d.Reason != "blocked anyway" {
		t.Fatalf("exit 2 with JSON = %+v", d)
	}
	if d := hooks.Decide(hooks.PostToolUse, "c", []hooks.Outcome{out(0, "plain words", "")}); len(d.Context) != 0 {
		t.Fatalf("PostToolUse plain stdout became context: %+v", d)
	}
	if d := hooks.Decide(hooks.UserPromptSubmit, "", []hooks.Outcome{out(0, "plain words", "")}); len(d.Context) != 1 {
		t.Fatalf("UserPromptSubmit plain stdout = %+v", d)
	}
	// Exit 2 without stderr still says which hook blocked.
	if d := hooks.Decide(hooks.Stop, "", []hooks.Outcome{out(2, "", "")}); !strings.Contains(d.Reason, "Stop hook") {
		t.Fatalf("reason = %q", d.Reason)
	}
}

func pd2(d string) string {
	return `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"` + d + `"}}`
}

type askRecorder struct{ reqs []permission.Request }

func (a *askRecorder) Ask(_ context.Context, r permission.Request) (permission.Decision, error) {
	a.reqs = append(a.reqs, r)
	return permission.Allow, nil
}

// With approvals on, "ask" puts the call to the person with the hook's
// reason, and their answer decides.
func TestPreToolUseAskWithApprovals(t *testing.T) {
	h := newHarness(t, bashCall, done)
	asker := &askRecorder{}
	h.gate = &tool.Gate{Level: func() permission.Level { return permission.Unrestricted },
		Approvals: func() bool { return true }, Asker: asker}
	h.settings(settingsFor("PreToolUse", "Bash", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"touches prod"}}'`))
	h.run(hooks.Options{}, "go")
	if len(asker.reqs) != 1 || !strings.Contains(asker.reqs[0].Title, "touches prod") {
		t.Fatalf("asked %+v", asker.reqs)
	}
	if len(h.shell.commands()) != 1 {
		t.Fatal("the approved call did not run")
	}
}
