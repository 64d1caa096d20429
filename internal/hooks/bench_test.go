package hooks_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/hooks"
	"meka.dev/meka/tool"
)

func benchHooks(b *testing.B, js string) *hooks.Hooks {
	s, err := hooks.ParseSettings("b.json", []byte(js))
	if err != nil {
		b.Fatal(err)
	}
	set, err := hooks.Discover(hooks.Sources{Config: s})
	if err != nil {
		b.Fatal(err)
	}
	return hooks.New(hooks.Options{Set: set, SessionID: "s", Cwd: b.TempDir(),
		Runner: &hooks.Runner{Env: []string{"PATH=" + os.Getenv("PATH")}, ProjectDir: b.TempDir()}})
}

var benchCall = agent.ToolInfo{Call: tool.Call{ID: "c1", Name: "shell_execute",
	Arguments: json.RawMessage(`{"command":"go test ./..."}`)}}

// BenchmarkNoMatch is the cost a tool call pays when hooks are set but
// none matches it: the target is under 20 µs.
func BenchmarkNoMatch(b *testing.B) {
	h := benchHooks(b, `{"hooks":{"PreToolUse":[{"matcher":"Edit|MultiEdit|Write","hooks":[{"type":"command","command":"true"}]}],
		"PostToolUse":[{"matcher":"mcp__.*","hooks":[{"type":"command","command":"true"}]}]}}`)
	for b.Loop() {
		h.BeforeTool(b.Context(), benchCall)
	}
}

// BenchmarkTrueHook runs a matching `true` hook, stdin, decision and row
// included; BenchmarkSpawnTrue spawns the same command directly. The
// target is under 3 ms between them.
func BenchmarkTrueHook(b *testing.B) {
	h := benchHooks(b, `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"true"}]}]}}`)
	for b.Loop() {
		if v := h.BeforeTool(b.Context(), benchCall); len(v.Entries) != 1 {
			b.Fatal(v)
		}
	}
}

func BenchmarkSpawnTrue(b *testing.B) {
	for b.Loop() {
		cmd := exec.Command("/bin/sh", "-c", "true")
		cmd.WaitDelay = time.Second
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
