package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/prompt"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clock is an injected, settable Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func canonDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func promptRows(rows []session.Row) []session.SystemPrompt {
	var out []session.SystemPrompt
	for _, r := range rows {
		if p, ok := r.Entry.(session.SystemPrompt); ok {
			out = append(out, p)
		}
	}
	return out
}

// The prompt is built at creation and recorded; a resume reuses it though
// AGENTS.md changed; /reload and a new day build a new one.
func TestSystemPromptRecordedAndReused(t *testing.T) {
	f := newFixture(t, `[{"text":"1"},{"text":"2"},{"text":"3"},{"text":"4"}]`)
	clk := &clock{now: time.Date(2026, 5, 6, 7, 8, 0, 0, time.UTC)}
	f.opts.Now = clk.Now
	f.opts.Prompt.Location = time.UTC
	cwd := canonDir(t)
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "version one\n")
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Instructions(); len(got) != 1 || !strings.HasPrefix(got[0], filepath.Join(cwd, "AGENTS.md")) {
		t.Fatalf("instructions %v", got)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(cwd, "AGENTS.md"), "version two\n")
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	s, err = h.Open(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "b"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.prov.Requests()
	if reqs[0].System != reqs[1].System || !strings.Contains(reqs[1].System, "version one") ||
		!strings.Contains(reqs[0].System, "Session started: Wednesday 2026-05-06 07:08 (time zone UTC") {
		t.Fatalf("resume rebuilt the prompt:\n%s", reqs[1].System)
	}
	s, err = h.Reload(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "c"}); err != nil {
		t.Fatal(err)
	}
	if sys := f.prov.Requests()[2].System; !strings.Contains(sys, "version two") {
		t.Fatalf("reload kept the old prompt:\n%s", sys)
	}
	clk.add(24 * time.Hour)
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if s, err = h.Open(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "d"}); err != nil {
		t.Fatal(err)
	}
	if sys := f.prov.Requests()[3].System; !strings.Contains(sys, "Thursday 2026-05-07") {
		t.Fatalf("a new day kept the old date:\n%s", sys)
	}
	if n := len(promptRows(s.Engine().Rows())); n != 3 {
		t.Fatalf("%d prompts recorded, want 3 (create, reload, new day)", n)
	}
}

// A file_read result touching a subdirectory carries its AGENTS.md once,
// also across a resume.
func TestSubdirectoryInstructionsAttachedOnce(t *testing.T) {
	call := func(id, path string) string {
		return `{"tool_calls":[{"id":"` + id + `","name":"file_read","arguments":{"path":"` + path + `"}}]}`
	}
	f := newFixture(t, `[`+call("c1", "sub/a.go")+`,`+call("c2", "sub/b.go")+`,{"text":"ok"},`+call("c3", "sub/c.go")+`,{"text":"ok"}]`)
	read := &fakeTool{spec: tool.Spec{Name: "file_read", Description: "read", Level: permission.Read, Kind: tool.KindRead,
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
		run: func(context.Context, tool.Call) (tool.Result, error) { return tool.Text("file text"), nil }}
	f.opts.Tools = func(host.Env) ([]tool.Tool, error) { return []tool.Tool{read}, nil }
	cwd := canonDir(t)
	writeFile(t, filepath.Join(cwd, "sub", "AGENTS.md"), "sub rules\n")
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.SystemPrompt(), "sub rules") {
		t.Fatal("a subdirectory's file is in the system prompt")
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "read"}); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if s, err = h.Open(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "read again"}); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, r := range s.Engine().Rows() {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			b, _ := json.Marshal(tr.Content)
			got = append(got, strings.Contains(string(b), prompt.AttachedPrefix+filepath.Join(cwd, "sub", "AGENTS.md")) &&
				strings.Contains(string(b), "sub rules"))
		}
	}
	if len(got) != 3 || !got[0] || got[1] || got[2] {
		t.Fatalf("attached per result: %v", got)
	}
}

// The skill tool returns a skill's body and other files; skill_write
// stores one in meka's store with its change as a diff; the loaded
// skill's text survives compaction.
func TestSkillTools(t *testing.T) {
	f := newFixture(t, `[
		{"tool_calls":[{"id":"s1","name":"skill","arguments":{"name":"deploy"}}]},
		{"tool_calls":[{"id":"s2","name":"skill_write","arguments":{"name":"notes","description":"Keep notes.","body":"NOTES-BODY"}}]},
		{"text":"ok"},
		{"text":"the summary"}]`)
	f.opts.Permissions.Default = permission.Workspace
	cwd := canonDir(t)
	writeFile(t, filepath.Join(cwd, ".agents", "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: Deploy it.\n---\nDEPLOY-BODY\n")
	writeFile(t, filepath.Join(cwd, ".agents", "skills", "deploy", "scripts", "go.sh"), "echo\n")
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.SystemPrompt(), "# Skills\n") || !strings.Contains(s.SystemPrompt(), "- deploy: Deploy it.") {
		t.Fatalf("no skill list:\n%s", s.SystemPrompt())
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	var results []session.ToolResult
	for _, r := range s.Engine().Rows() {
		if tr, ok := r.Entry.(session.ToolResult); ok {
			results = append(results, tr)
		}
	}
	if len(results) != 2 {
		t.Fatalf("results %+v", results)
	}
	b, _ := json.Marshal(results[0].Content)
	if results[0].Status != session.StatusOK || !strings.Contains(string(b), "DEPLOY-BODY") || !strings.Contains(string(b), "- scripts/go.sh") {
		t.Fatalf("skill result %s", b)
	}
	stored := filepath.Join(f.opts.DataDir, "skills", "notes", "SKILL.md")
	if results[1].Status != session.StatusOK || !strings.Contains(results[1].Change, "+++ "+stored) || !strings.Contains(results[1].Change, "+NOTES-BODY") {
		t.Fatalf("skill_write %+v", results[1])
	}
	if got, _ := os.ReadFile(stored); !strings.Contains(string(got), "name: notes") {
		t.Fatalf("stored %q", got)
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	var summary string
	for _, r := range s.Engine().Rows() {
		if c, ok := r.Entry.(session.Compaction); ok {
			summary = c.Summary
		}
	}
	if !strings.Contains(summary, "the summary") || !strings.Contains(summary, "DEPLOY-BODY") {
		t.Fatalf("summary %q", summary)
	}
}

// A slash command naming a skill that exists but cannot be read fails the
// turn (ACP answers InternalError); a name no skill has goes to the model.
func TestUnreadableSkillIsAnError(t *testing.T) {
	f := newFixture(t, `[{"text":"no such command"}]`)
	cwd := canonDir(t)
	// SKILL.md is a directory: it exists, and reading it fails, as root too.
	if err := os.MkdirAll(filepath.Join(cwd, ".agents", "skills", "broken", "SKILL.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "/broken now"}); err == nil || !strings.Contains(err.Error(), "invoke skill broken") {
		t.Fatalf("unreadable skill: %v", err)
	}
	if res, err := s.Prompt(t.Context(), model.Text{Text: "/nonexistent please"}); err != nil || res.Reply != "no such command" {
		t.Fatalf("unknown name: %+v %v", res, err)
	}
}

func TestInvokedSkillCarriedOnce(t *testing.T) {
	f := newFixture(t, `[{"text":"deployed"},{"text":"ok"},{"text":"the summary"}]`)
	cwd := canonDir(t)
	writeFile(t, filepath.Join(cwd, ".agents", "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: Deploy it.\n---\nDEPLOY-BODY\n")
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"/deploy now", "and then"} {
		if _, err := s.Prompt(t.Context(), model.Text{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows := s.Engine().Rows()
	c := rows[session.LatestCompaction(rows)].Entry.(session.Compaction)
	if n := strings.Count(c.Summary, "DEPLOY-BODY"); n != 1 {
		t.Fatalf("the skill's body is in the summary %d times:\n%s", n, c.Summary)
	}
}
