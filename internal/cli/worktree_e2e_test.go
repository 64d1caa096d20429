package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// meka -w NAME runs a turn in a new worktree of a real repository; the
// turn writes with file_write, edits with sed -i and deletes with rm in a
// shell; meka sessions rewind --code puts the worktree's files back, and
// meka worktrees list|remove see and remove it. The repository's own
// checkout is never touched.
func TestWorktreeTurnRewoundEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Skip(t, "git is not installed")
	}
	repo := t.TempDir()
	git := func(dir, script string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", script, err, out)
		}
	}
	git(repo, "git init -q -b main && printf 'hello\\n' > a.txt && printf 'keep\\n' > b.txt && git add . && git -c user.name=t -c user.email=t@t commit -q -m init")
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"new.txt","content":"created\n"}}]},
	 {"tool_calls":[{"id":"s","name":"shell_execute","arguments":{"command":"sed -i s/hello/bye/ a.txt && rm b.txt"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")

	_, errOut, code := run(t, repo, env, "-w", "feat", "--permission", "unrestricted", "--oneshot", "change things")
	if code != 0 {
		t.Fatalf("meka -w: code %d %s", code, errOut)
	}
	list, _, code := run(t, repo, env, "worktrees", "list")
	fields := strings.Fields(list)
	if code != 0 || len(fields) != 3 || fields[0] != "feat" || fields[1] != "meka/feat" {
		t.Fatalf("worktrees list: %q", list)
	}
	wt := fields[2]
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	if read(filepath.Join(wt, "a.txt")) != "bye\n" || read(filepath.Join(wt, "new.txt")) != "created\n" {
		t.Fatalf("the turn did not run in the worktree: %q", read(filepath.Join(wt, "a.txt")))
	}
	if read(filepath.Join(repo, "a.txt")) != "hello\n" || read(filepath.Join(repo, "b.txt")) != "keep\n" {
		t.Fatal("the repository's own checkout was changed")
	}

	sessions, _, _ := run(t, wt, env, "sessions", "list")
	lines := strings.Split(strings.TrimSpace(sessions), "\n")
	if len(lines) < 2 {
		t.Fatalf("sessions list in the worktree: %q", sessions)
	}
	id := strings.Fields(lines[1])[0]
	out, errOut, code := run(t, wt, env, "sessions", "rewind", id, "--turn", "0", "--code", "--yes")
	if code != 0 || !strings.Contains(out, "put back") {
		t.Fatalf("rewind --code: code %d %q %q", code, out, errOut)
	}
	if read(filepath.Join(wt, "a.txt")) != "hello\n" || read(filepath.Join(wt, "b.txt")) != "keep\n" {
		t.Fatal("the sed -i edit or the rm was not put back")
	}
	if _, err := os.Stat(filepath.Join(wt, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt not removed: %v", err)
	}
	if out, errOut, code := run(t, repo, env, "worktrees", "remove", "feat"); code != 0 {
		t.Fatalf("worktrees remove: %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree is still there: %v", err)
	}
}
