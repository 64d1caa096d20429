package prompt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Paris on a machine without a zone database

	"meka.dev/meka/internal/prompt"
	"meka.dev/meka/internal/skills"
)

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree is a repository with instructions at several depths:
// root (AGENTS.md), a (override beside AGENTS.md), a/b (CLAUDE.md only),
// a/b/c (the cwd, a custom fallback name), and a/b/c/sub below the cwd.
func tree(t testing.TB) (root, cwd string) {
	t.Helper()
	root, _ = filepath.EvalSymlinks(t.TempDir())
	root = filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "AGENTS.md"), "root rules\n")
	write(t, filepath.Join(root, "a", "AGENTS.md"), "a plain\n")
	write(t, filepath.Join(root, "a", "AGENTS.override.md"), "a override\n")
	write(t, filepath.Join(root, "a", "b", "CLAUDE.md"), "b claude\n")
	write(t, filepath.Join(root, "a", "b", "c", "RULES.md"), "c custom\n")
	write(t, filepath.Join(root, "a", "b", "c", "sub", "AGENTS.md"), "sub rules\n")
	write(t, filepath.Join(root, "a", "b", "c", "sub", "deeper", "AGENTS.md"), "deeper rules\n")
	return root, filepath.Join(root, "a", "b", "c")
}

func TestInstructionsRootToCwd(t *testing.T) {
	root, cwd := tree(t)
	user := filepath.Join(t.TempDir(), "meka", "AGENTS.md")
	write(t, user, "user rules\n")
	in := prompt.LoadInstructions(prompt.InstructionOptions{Cwd: cwd, UserFile: user, Fallbacks: []string{"RULES.md"}})
	var got []string
	for _, f := range in.Files {
		got = append(got, f.Path)
	}
	want := []string{user, filepath.Join(root, "AGENTS.md"), filepath.Join(root, "a", "AGENTS.override.md"),
		filepath.Join(root, "a", "b", "CLAUDE.md"), filepath.Join(root, "a", "b", "c", "RULES.md")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files\n%v\nwant\n%v", got, want)
	}
	// Concatenated in that order, each under its path.
	last := -1
	for i, body := range []string{"user rules", "root rules", "a override", "b claude", "c custom"} {
		at := strings.Index(in.Text, "## "+want[i]+"\n\n"+body)
		if at <= last {
			t.Fatalf("%q out of place in\n%s", body, in.Text)
		}
		last = at
	}
	for _, no := range []string{"a plain", "sub rules"} {
		if strings.Contains(in.Text, no) {
			t.Fatalf("%q loaded:\n%s", no, in.Text)
		}
	}
	// Without the custom name, c has nothing.
	in = prompt.LoadInstructions(prompt.InstructionOptions{Cwd: cwd})
	if strings.Contains(in.Text, "c custom") || len(in.Files) != 3 {
		t.Fatalf("files %v", in.Files)
	}
}

// Without .git the project root is the cwd: nothing above it is read.
func TestInstructionsNoRepository(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	write(t, filepath.Join(dir, "AGENTS.md"), "above\n")
	cwd := filepath.Join(dir, "w")
	write(t, filepath.Join(cwd, "AGENTS.md"), "here\n")
	in := prompt.LoadInstructions(prompt.InstructionOptions{Cwd: cwd})
	if len(in.Files) != 1 || !strings.Contains(in.Text, "here") || strings.Contains(in.Text, "above") {
		t.Fatalf("%v\n%s", in.Files, in.Text)
	}
}

func TestInstructionsBudgetCut(t *testing.T) {
	root, cwd := tree(t)
	write(t, filepath.Join(root, "AGENTS.md"), strings.Repeat("line of root rules\n", 10))
	in := prompt.LoadInstructions(prompt.InstructionOptions{Cwd: cwd, MaxBytes: 100})
	if len(in.Files) != 3 {
		t.Fatalf("files %v", in.Files)
	}
	f := in.Files[0]
	if !f.Cut || f.Size != 190 || f.Bytes > 100 || f.Bytes == 0 {
		t.Fatalf("first file %+v", f)
	}
	if !strings.Contains(in.Text, fmt.Sprintf("[This file was cut: only %d of its 190 bytes fit the instructions budget.]", f.Bytes)) {
		t.Fatalf("cut not said:\n%s", in.Text)
	}
	if strings.Contains(in.Text, "a override") || !in.Files[1].Cut || in.Files[1].Bytes != 0 {
		t.Fatalf("a file past the budget was loaded: %v\n%s", in.Files, in.Text)
	}
	if !strings.Contains(f.String(), "cut to") {
		t.Fatalf("String() = %s", f)
	}
}

func TestAttacherOncePerDirectory(t *testing.T) {
	_, cwd := tree(t)
	a := prompt.NewAttacher(prompt.InstructionOptions{Cwd: cwd})
	if got := a.Attach(filepath.Join(cwd, "top.go")); got != "" {
		t.Fatalf("the cwd's own file attached: %q", got)
	}
	got := a.Attach("sub/deeper/x.go")
	if !strings.Contains(got, "sub rules") || !strings.Contains(got, "deeper rules") ||
		strings.Index(got, "sub rules") > strings.Index(got, "deeper rules") {
		t.Fatalf("first touch: %q", got)
	}
	if again := a.Attach(filepath.Join(cwd, "sub", "y.go")); again != "" {
		t.Fatalf("attached twice: %q", again)
	}
	if out := a.Attach(filepath.Join(filepath.Dir(cwd), "elsewhere.go")); out != "" {
		t.Fatalf("outside the cwd: %q", out)
	}
	// A resumed session reads what was attached from its results.
	b := prompt.NewAttacher(prompt.InstructionOptions{Cwd: cwd})
	b.Seen("file text\n" + got)
	if again := b.Attach(filepath.Join(cwd, "sub", "deeper", "z.go")); again != "" {
		t.Fatalf("attached again after resume: %q", again)
	}
}

func TestEnvironmentBlock(t *testing.T) {
	_, cwd := tree(t)
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 4, 22, 30, 0, 0, time.UTC) // 23:30 in Paris
	p := prompt.Build(t.Context(), prompt.Options{
		Preamble:     "You are meka.",
		Instructions: prompt.InstructionOptions{Cwd: cwd},
		Roots:        []string{"/srv/other"},
		OS:           "linux/amd64", Shell: "sh",
		Now: now, Location: paris,
		Permission: "workspace", Allows: "writes confined to the workspace, no network",
		Model: "m1", ContextWindow: 200000,
		Git: prompt.GitOptions{Path: filepath.Join(t.TempDir(), "no-git")},
	})
	for _, want := range []string{
		"You are meka.\n\n# Project instructions",
		"Working directory: " + cwd + "\n",
		"Other workspace directories (the file tools cover them too): /srv/other\n",
		"OS: linux/amd64; shell commands run with sh\n",
		"Session started: Wednesday 2026-03-04 23:30 (time zone Europe/Paris, UTC+01:00)",
		"Git repository: yes\n",
		"Permission level: workspace (writes confined to the workspace, no network)\n",
		"Model: m1\n", "Context window: 200000 tokens",
	} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p.Text)
		}
	}
	if p.Day != "2026-03-04" || len(p.Files) != 3 {
		t.Errorf("day %s files %v", p.Day, p.Files)
	}
}

func TestSkillListBudget(t *testing.T) {
	var list []skills.Skill
	for i := range 50 {
		list = append(list, skills.Skill{Name: fmt.Sprintf("skill-%02d", i), Description: strings.Repeat("does a thing ", 20)})
	}
	list = append(list, skills.Skill{Name: "hidden", Description: "only for people", DisableModelInvocation: true})
	text, names, left := prompt.SkillList(list, 0)
	if len(text) > prompt.SkillListMax || left == 0 || len(names)+left != 50 {
		t.Fatalf("%d bytes, %d listed, %d left", len(text), len(names), left)
	}
	if !strings.Contains(text, fmt.Sprintf("(%d more skills are not listed", left)) || strings.Contains(text, "hidden") {
		t.Fatalf("list:\n%s", text)
	}
	// 2% of a 50,000-token window is 1,000 tokens, about 4,000 bytes.
	small, _, _ := prompt.SkillList(list, 50000)
	if len(small) > 4000+200 || len(small) >= len(text) {
		t.Fatalf("window budget: %d bytes", len(small))
	}
}
