package prompt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/prompt"
	"meka.dev/meka/internal/skills"
	"meka.dev/meka/internal/testenv"
)

func gitRepo(t testing.TB) string {
	t.Helper()
	testenv.NeedGit(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	testenv.Sh(t, dir, "git init -q -b trunk")
	for i := 1; i <= 4; i++ {
		write(t, filepath.Join(dir, "f.txt"), fmt.Sprint(i))
		testenv.Sh(t, dir, fmt.Sprintf("git add f.txt && git commit -q -m 'commit number %d'", i))
	}
	for i := range 25 {
		write(t, filepath.Join(dir, fmt.Sprintf("new%02d.txt", i)), "x")
	}
	return dir
}

func build(t *testing.T, cwd string, g prompt.GitOptions) string {
	t.Helper()
	return prompt.Build(t.Context(), prompt.Options{Instructions: prompt.InstructionOptions{Cwd: cwd},
		Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Location: time.UTC, Git: g}).Text
}

func TestGitState(t *testing.T) {
	dir := gitRepo(t)
	// A generous bound: this test is about what is said, not how fast.
	text := build(t, dir, prompt.GitOptions{Timeout: 10 * time.Second})
	for _, want := range []string{"Git repository: yes, branch trunk\n", "Git status (short):\n  ?? new00.txt\n",
		"  ... and 5 more\n", "Recent commits:\n  commit number 4\n  commit number 3\n  commit number 2"} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "commit number 1") || strings.Contains(text, "new24.txt") {
		t.Errorf("unbounded:\n%s", text)
	}
}

func TestGitAbsentSlowBroken(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// The slow git would answer after 30 seconds, and leave a mark when
	// it does: the deadline must stop it first, whatever the machine's
	// load, rather than the prompt waiting for it.
	slow := filepath.Join(bin, "slow-git")
	answered := filepath.Join(bin, "slow-git-answered")
	write(t, slow, "#!/bin/sh\nsleep 30\ntouch "+answered+"\necho '## main'\n")
	broken := filepath.Join(bin, "broken-git")
	write(t, broken, "#!/bin/sh\necho fatal: not a git repository >&2\nexit 128\n")
	for _, p := range []string{slow, broken} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, g := range map[string]prompt.GitOptions{
		"absent": {Path: filepath.Join(bin, "missing")},
		"slow":   {Path: slow},
		"broken": {Path: broken},
		// The real git in a .git that is no repository.
		"corrupt": {},
	} {
		t.Run(name, func(t *testing.T) {
			text := build(t, dir, g)
			if !strings.Contains(text, "Git repository: yes") || strings.Contains(text, "branch") || strings.Contains(text, "fatal") {
				t.Fatalf("prompt:\n%s", text)
			}
		})
	}
	if _, err := os.Stat(answered); err == nil {
		t.Error("the prompt waited for the slow git to answer instead of stopping it at the deadline")
	}
	plain, _ := filepath.EvalSymlinks(t.TempDir())
	if text := build(t, plain, prompt.GitOptions{}); !strings.Contains(text, "Git repository: no") {
		t.Fatalf("outside a repository:\n%s", text)
	}
}

// The git block of a small repository with the real git: what the first
// prompt of a session in a repository pays.
func BenchmarkGitState(b *testing.B) {
	dir := gitRepo(b)
	for b.Loop() {
		p := prompt.Build(b.Context(), prompt.Options{Instructions: prompt.InstructionOptions{Cwd: dir},
			Git: prompt.GitOptions{Timeout: 10 * time.Second}})
		if !strings.Contains(p.Text, "branch trunk") {
			b.Fatalf("prompt:\n%s", p.Text)
		}
	}
}

// The system prompt of a repository with 5 nested AGENTS.md files and 50
// skills, git aside.
func BenchmarkBuild(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	cwd := root
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 5 {
		if i > 0 {
			cwd = filepath.Join(cwd, fmt.Sprintf("d%d", i))
		}
		write(b, filepath.Join(cwd, "AGENTS.md"), strings.Repeat(fmt.Sprintf("rule %d of this level\n", i), 100))
	}
	for i := range 50 {
		name := fmt.Sprintf("skill-%02d", i)
		write(b, filepath.Join(root, ".agents", "skills", name, "SKILL.md"),
			fmt.Sprintf("---\nname: %s\ndescription: Does thing %d when the task asks for it.\n---\n\nBody %d.\n", name, i, i))
	}
	b.ReportAllocs()
	for b.Loop() {
		list, problems := skills.Discover(prompt.SkillLocations(cwd, "", "", ""))
		if len(list) != 50 || len(problems) != 0 {
			b.Fatalf("%d skills, %v", len(list), problems)
		}
		p := prompt.Build(b.Context(), prompt.Options{Instructions: prompt.InstructionOptions{Cwd: cwd},
			Skills: list, Git: prompt.GitOptions{Off: true}})
		if len(p.Files) != 5 || len(p.Skills) != 50 {
			b.Fatalf("%d files, %d skills", len(p.Files), len(p.Skills))
		}
	}
}
