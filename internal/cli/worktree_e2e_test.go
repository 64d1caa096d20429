package cli_test

import (
	"os"
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
	repo := testenv.GitRepo(t, map[string]string{"a.txt": "hello\n", "b.txt": "keep\n"})
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
