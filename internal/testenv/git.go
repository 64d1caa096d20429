package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GitEnv is what git runs under in tests: neither the machine's nor the
// user's config (their hooks, signing or default branch would change the
// outcome) and a fixed author and committer (commits work on a machine
// with no identity set).
var GitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t",
}

// NeedGit skips t, or under CI fails it, when git is not installed.
func NeedGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		Skip(t, "git is not installed")
	}
}

// Sh runs script with sh in dir, GitEnv added to the environment, and
// returns its combined output; a failure fails t.
func Sh(t testing.TB, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), GitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	return string(out)
}

// GitRepo is a new repository on branch main in a temporary directory
// whose one commit, "init", holds files (name to content; none makes an
// empty commit). Its path has no symbolic links, so it compares equal to
// what git prints. It needs git (NeedGit).
func GitRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	NeedGit(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Sh(t, dir, "git init -q -b main && git add -A && git commit -q --allow-empty -m init")
	return dir
}
