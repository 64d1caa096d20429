//go:build linux

package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// meka -w NAME is killed with SIGKILL, its whole process group with it,
// while the turn's git commit in the worktree holds the worktree's
// index.lock (its editor is still open). The next start of meka in the
// repository leaves no orphan: git lists the worktree as a plain one (not
// prunable, not locked), no lock file is left in the repository, and meka
// worktrees list agrees with git; the worktree can be committed in and
// removed.
func TestWorktreeKilledMidTurnLeavesNoLock(t *testing.T) {
	repo := testenv.GitRepo(t, map[string]string{"a.txt": "hello\n"})
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "editing")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The commit's editor says it runs, then waits: git holds index.lock
	// meanwhile.
	editor := filepath.Join(tmp, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\necho go > "+fifo+"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"s","name":"shell_execute","arguments":{"command":"echo bye > a.txt && git -c user.name=t -c user.email=t@t -c core.editor=` + editor + ` commit -a"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")

	cmd := exec.Command(mekaBinary(t), "-w", "feat", "--permission", "unrestricted", "--oneshot", "commit the change")
	cmd.Dir, cmd.Env = repo, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	// Blocks until the commit's editor runs, index.lock taken: no polling.
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	locks := func() []string {
		var out []string
		filepath.WalkDir(filepath.Join(repo, ".git"), func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".lock") {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	if len(locks()) == 0 {
		t.Fatal("the kill left no lock: the test does not test what it says")
	}

	// The next start: another worktree session in the same repository.
	if _, errOut, code := run(t, repo, env, "-w", "other", "--permission", "unrestricted", "--oneshot", "hi"); code != 0 {
		t.Fatalf("the next start: code %d %s", code, errOut)
	}
	if l := locks(); len(l) != 0 {
		t.Fatalf("locks left after the next start: %q", l)
	}
	porcelain := testenv.Sh(t, repo, "git worktree list --porcelain")
	if strings.Contains(porcelain, "prunable") || strings.Contains(porcelain, "locked") {
		t.Fatalf("git worktree list: %s", porcelain)
	}
	list, _, code := run(t, repo, env, "worktrees", "list")
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.Contains(porcelain, "worktree "+f[2]+"\n") || !strings.Contains(porcelain, "branch refs/heads/"+f[1]+"\n") {
			t.Fatalf("meka worktrees list %q disagrees with git:\n%s", line, porcelain)
		}
		names = append(names, f[0])
	}
	if code != 0 || strings.Join(names, ",") != "feat,other" {
		t.Fatalf("meka worktrees list: %q", list)
	}
	feat := strings.Fields(strings.Split(list, "\n")[0])[2]
	// git works in the killed worktree again, and it can be removed.
	testenv.Sh(t, feat, "git commit -q -a -m after")
	if _, errOut, code := run(t, repo, env, "worktrees", "remove", "feat", "--keep-branch"); code != 0 {
		t.Fatalf("worktrees remove: %s", errOut)
	}
}
