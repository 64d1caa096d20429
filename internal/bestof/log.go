package bestof

import (
	"encoding/json"
	"slices"
	"strings"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// shellTool is the built-in tool whose calls may run tests.
const shellTool = "shell_execute"

// TestRun is a shell call of a candidate's session that ran tests.
type TestRun struct {
	Command string `json:"command"`
	// ExitCode is the command's exit status; nil when it did not exit on
	// its own or never ran (Status says which).
	ExitCode *int `json:"exit_code"`
	// Status is the call's result status: ok, error, refused, canceled,
	// interrupted; "" when the log has no result for it.
	Status string `json:"status"`
}

// Passed reports whether the run exited 0.
func (t TestRun) Passed() bool { return t.ExitCode != nil && *t.ExitCode == 0 }

// testRuns are the calls in rows whose command runs a test suite, in
// the order the model made them, each with how it ended.
func testRuns(rows []session.Row) []TestRun {
	results := map[string]session.ToolResult{}
	for _, r := range rows {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			results[tr.CallID] = tr
		}
	}
	var runs []TestRun
	for _, r := range rows {
		am, ok := r.Entry.(session.AssistantMessage)
		if !ok {
			continue
		}
		for _, p := range am.Parts {
			call, ok := p.(model.ToolCall)
			if !ok || call.Name != shellTool {
				continue
			}
			var a struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(call.Arguments, &a) != nil || !IsTestCommand(a.Command) {
				continue
			}
			run := TestRun{Command: a.Command}
			if res, ok := results[call.ID]; ok {
				run.Status = res.Status
				var st struct {
					ExitCode *int `json:"exit_code"`
				}
				if json.Unmarshal(res.State, &st) == nil && st.ExitCode != nil && *st.ExitCode >= 0 {
					run.ExitCode = st.ExitCode
				}
			}
			runs = append(runs, run)
		}
	}
	return runs
}

// summary is the text of the session's last assistant message: the
// candidate's own account of what it did.
func summary(rows []session.Row) string {
	for _, r := range slices.Backward(rows) {
		am, ok := r.Entry.(session.AssistantMessage)
		if !ok {
			continue
		}
		var b strings.Builder
		for _, p := range am.Parts {
			if t, ok := p.(model.Text); ok {
				b.WriteString(t.Text)
			}
		}
		if s := strings.TrimSpace(b.String()); s != "" {
			return s
		}
	}
	return ""
}

// testRunners are the commands, as leading words, that run a project's
// tests. "make" is matched separately: its target may follow flags.
var testRunners = [][]string{
	{"go", "test"},
	{"npm", "test"}, {"npm", "t"}, {"npm", "run", "test"},
	{"yarn", "test"}, {"pnpm", "test"}, {"pnpm", "run", "test"}, {"bun", "test"},
	{"npx", "jest"}, {"npx", "vitest"}, {"jest"}, {"vitest"},
	{"pytest"}, {"python", "-m", "pytest"}, {"python3", "-m", "pytest"}, {"tox"},
	{"cargo", "test"}, {"cargo", "nextest"},
	{"mvn", "test"}, {"gradle", "test"}, {"./gradlew", "test"},
	{"dotnet", "test"}, {"mix", "test"}, {"bundle", "exec", "rspec"}, {"rspec"},
}

// IsTestCommand reports whether a shell command runs a test suite in one
// of its pipeline stages (go test, npm test, pytest, cargo test, make
// test, ...), after any leading VAR=value assignments.
func IsTestCommand(command string) bool {
	stages := strings.FieldsFunc(command, func(r rune) bool {
		return r == ';' || r == '&' || r == '|' || r == '\n' || r == '(' || r == ')'
	})
	for _, st := range stages {
		words := strings.Fields(st)
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			words = words[1:]
		}
		for len(words) > 0 && (words[0] == "time" || words[0] == "exec" || words[0] == "env") {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		if words[0] == "make" || words[0] == "gmake" {
			for _, w := range words[1:] {
				if w == "test" || w == "check" || strings.HasPrefix(w, "test-") {
					return true
				}
			}
			continue
		}
		for _, r := range testRunners {
			if len(words) >= len(r) && slices.Equal(words[:len(r)], r) {
				return true
			}
		}
	}
	return false
}
