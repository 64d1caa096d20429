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

// meka sessions fork ID --turn N --worktree NAME writes the workspace's
// files as after turn N into a new git worktree (branch meka/NAME), where
// the fork works: at turn 0 it is the commit's checkout, clean; at turn 1
// the turn's edit and new file are its uncommitted changes. The
// repository's checkout is not touched.
func TestForkIntoWorktreeEndToEnd(t *testing.T) {
	repo := testenv.GitRepo(t, map[string]string{"a.txt": "hello\n"})
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"new.txt","content":"created\n"}},
	                {"id":"e","name":"file_write","arguments":{"path":"a.txt","content":"bye\n"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	if _, errOut, code := run(t, repo, env, "--oneshot", "change things"); code != 0 {
		t.Fatalf("turn: %d %s", code, errOut)
	}
	// The user moves on in the checkout after the turn.
	testenv.Sh(t, repo, "printf 'later\\n' > a.txt && rm new.txt")
	list, _, _ := run(t, repo, env, "sessions", "list")
	id := strings.Fields(strings.Split(strings.TrimSpace(list), "\n")[1])[0]
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }

	for _, c := range []struct {
		turn, name, a, status string
		newFile               bool
	}{
		{turn: "0", name: "at0", a: "hello\n", status: ""},
		{turn: "1", name: "at1", a: "bye\n", status: " M a.txt\n?? new.txt\n", newFile: true},
	} {
		out, errOut, code := run(t, repo, env, "sessions", "fork", id, "--turn", c.turn, "--worktree", c.name)
		if code != 0 || !strings.Contains(errOut, "meka/"+c.name) {
			t.Fatalf("fork --turn %s --worktree: code %d %q", c.turn, code, errOut)
		}
		fork := strings.TrimSpace(out)
		wts, _, _ := run(t, repo, env, "worktrees", "list")
		var dir string
		for _, line := range strings.Split(wts, "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == c.name && f[1] == "meka/"+c.name {
				dir = f[2]
			}
		}
		if dir == "" {
			t.Fatalf("worktrees list: %q", wts)
		}
		if got := read(filepath.Join(dir, "a.txt")); got != c.a {
			t.Errorf("turn %s: a.txt = %q, want %q", c.turn, got, c.a)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); (err == nil) != c.newFile {
			t.Errorf("turn %s: new.txt there: %v", c.turn, err == nil)
		}
		if st := testenv.Sh(t, dir, "git status --porcelain"); st != c.status {
			t.Errorf("turn %s: git status %q, want %q", c.turn, st, c.status)
		}
		if forks, _, _ := run(t, dir, env, "sessions", "list"); !strings.Contains(forks, fork[:8]) {
			t.Errorf("turn %s: the fork does not work in its worktree: %q", c.turn, forks)
		}
	}
	if read(filepath.Join(repo, "a.txt")) != "later\n" {
		t.Fatal("the repository's checkout was changed")
	}
	// A name in use is refused, and nothing is forked.
	before, _, _ := run(t, repo, env, "sessions", "list", "--all")
	if _, errOut, code := run(t, repo, env, "sessions", "fork", id, "--worktree", "at0"); code == 0 || !strings.Contains(errOut, "exists") {
		t.Fatalf("fork into a worktree in use: %d %q", code, errOut)
	}
	if after, _, _ := run(t, repo, env, "sessions", "list", "--all"); after != before {
		t.Fatalf("a fork was left:\n%s\nwas\n%s", after, before)
	}
}
