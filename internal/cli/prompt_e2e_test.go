package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A trivial prompt costs one model request, and the first request of a
// session, with every built-in tool offered and no skill or MCP server, is
// at most 16 KiB (15 KiB until diagnostics and worktree isolation joined
// the built-ins; their descriptions were cut to the bone first).
func TestFirstRequestBudget(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"text":"hi."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	out, errOut, code := run(t, t.TempDir(), env, "--oneshot", "hi")
	if code != 0 || out != "hi.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests for a trivial prompt", len(reqs))
	}
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range body.Tools {
		names = append(names, tl.Function.Name)
	}
	for _, want := range []string{"file_read", "file_edit", "shell_execute", "skill_write", "memory_write", "memory_delete"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("tool %s not offered: %v", want, names)
		}
	}
	if n := len(reqs[0].Body); n > 16*1024 {
		t.Errorf("first request is %d bytes, over 16 KiB", n)
	}
	t.Logf("first request: %d bytes, %d tools", len(reqs[0].Body), len(names))
}

// /name on the one-shot prompt invokes the skill; -v names the
// instruction files loaded.
func TestOneshotSkillAndInstructions(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"text":"deployed."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"AGENTS.md":                      "PROJECT-RULES\n",
		".agents/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy the app.\n---\nDEPLOY-BODY\n",
		".meka/skills/bad/SKILL.md":      "---\nname: other\ndescription: x\n---\n",
	} {
		p := filepath.Join(work, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	out, errOut, code := run(t, work, env, "-v", "--oneshot", "/deploy to staging")
	if code != 0 || out != "deployed.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "meka: instructions: "+filepath.Join(work, "AGENTS.md")+" (14 bytes)") {
		t.Errorf("stderr does not name the instructions: %q", errOut)
	}
	if !strings.Contains(errOut, "Skill skipped: "+filepath.Join(work, ".meka/skills/bad/SKILL.md")) {
		t.Errorf("stderr does not name the skipped skill: %q", errOut)
	}
	body := srv.Requests()[0].Body
	for _, want := range []string{"PROJECT-RULES", `/deploy to staging\n[Skill deploy`, "DEPLOY-BODY"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("request lacks %q: %s", want, body)
		}
	}
	// Stored as typed: the transcript shows the command, not the body.
	list, _, _ := run(t, work, env, "sessions", "list")
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	show, _, _ := run(t, work, env, "sessions", "show", id)
	if !strings.Contains(show, "user: /deploy to staging") || strings.Contains(show, "DEPLOY-BODY") {
		t.Errorf("sessions show:\n%s", show)
	}
}

// meka projects add/list, --project (a name no project has refused), and
// meka memories list of what a one-shot turn remembered.
func TestProjectsAndMemoriesCLI(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
		{"tool_calls":[{"id":"m","name":"memory_write","arguments":{"text":"web ships with make ship"}}]},
		{"text":"noted."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	if out, errOut, code := run(t, work, env, "projects", "list"); code != 0 || !strings.Contains(out, "no projects") {
		t.Fatalf("empty list: %d %q %q", code, out, errOut)
	}
	if _, errOut, code := run(t, work, env, "projects", "add", "web", "--dir", work); code != 0 {
		t.Fatalf("add: %q", errOut)
	}
	if _, errOut, code := run(t, work, env, "projects", "add", "web"); code == 0 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("add twice: %d %q", code, errOut)
	}
	if _, errOut, code := run(t, work, env, "projects", "add", "no/slash"); code != 2 || !strings.Contains(errOut, "project name") {
		t.Fatalf("bad name: %d %q", code, errOut)
	}
	if out, _, _ := run(t, work, env, "projects", "list"); !strings.Contains(out, "web") || !strings.Contains(out, work) {
		t.Fatalf("list: %q", out)
	}
	if _, errOut, code := run(t, work, env, "--oneshot", "--project", "nope", "hi"); code == 0 || !strings.Contains(errOut, "no such project") {
		t.Fatalf("unknown project: %d %q", code, errOut)
	}
	if list, _, _ := run(t, work, env, "sessions", "list"); strings.Contains(list, "hi") {
		t.Fatalf("a refused session was stored: %q", list)
	}
	if out, errOut, code := run(t, work, env, "--oneshot", "--project", "web", "remember how web ships"); code != 0 || out != "noted.\n" {
		t.Fatalf("oneshot: %d %q %q", code, out, errOut)
	}
	if out, _, _ := run(t, work, env, "memories", "list", "--project", "web"); !strings.Contains(out, "- m1: web ships with make ship") {
		t.Fatalf("project memories: %q", out)
	}
	if out, _, _ := run(t, work, env, "memories", "list"); !strings.Contains(out, "no memories in your own") {
		t.Fatalf("user memories: %q", out)
	}
}

// PATCH /v1/sessions/{id} moves a session only onto a project that exists.
func TestServePatchProject(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/v1", "MEKA_DATA_DIR="+data)
	if _, errOut, code := run(t, work, env, "projects", "add", "web"); code != 0 {
		t.Fatalf("add: %q", errOut)
	}
	srv := startServe(t, work, env)
	var rec struct{ ID string }
	if code := srv.call(t, "POST", "/v1/sessions", map[string]any{"cwd": work}, &rec); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := srv.call(t, "PATCH", "/v1/sessions/"+rec.ID, map[string]any{"project": "nope"}, nil); code != 422 {
		t.Fatalf("unknown project: %d", code)
	}
	if code := srv.call(t, "PATCH", "/v1/sessions/"+rec.ID, map[string]any{"project": "web"}, nil); code != 200 {
		t.Fatalf("move: %d", code)
	}
	var got struct{ Project string }
	if code := srv.call(t, "GET", "/v1/sessions/"+rec.ID, nil, &got); code != 200 || got.Project != "web" {
		t.Fatalf("get: %d %+v", code, got)
	}
}
