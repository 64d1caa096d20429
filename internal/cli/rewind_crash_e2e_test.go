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

// meka is killed with SIGKILL while a turn's shell command runs (after
// its sed -i and rm): the files are rewound afterwards from the turn's
// checkpoint. The command's changes have no checkpoint after them, so
// they count as changed outside meka: refused first, forced then.
func TestKilledMidTurnThenRewound(t *testing.T) {
	testenv.NeedGit(t)
	work := t.TempDir()
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("hello\n"), 0o644)
	os.WriteFile(filepath.Join(work, "b.txt"), []byte("keep\n"), 0o644)
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"w","name":"file_write","arguments":{"path":"new.txt","content":"created\n"}}]},
	 {"tool_calls":[{"id":"s","name":"shell_execute","arguments":{"command":"sed -i s/hello/bye/ a.txt && rm b.txt && echo go > ` + fifo + ` && sleep 600"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")

	cmd := exec.Command(mekaBinary(t), "--permission", "unrestricted", "--oneshot", "change things")
	cmd.Dir, cmd.Env = work, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	// Blocks until the command has edited and deleted: no polling.
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()

	list, _, _ := run(t, work, env, "sessions", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) < 2 {
		t.Fatalf("sessions list: %q", list)
	}
	id := strings.Fields(lines[1])[0]
	_, errOut, code := run(t, work, env, "sessions", "rewind", id, "--turn", "0", "--code", "--yes")
	if code == 0 || !strings.Contains(errOut, "a.txt") || !strings.Contains(errOut, "--force") {
		t.Fatalf("rewind without --force: code %d %q", code, errOut)
	}
	out, errOut, code := run(t, work, env, "sessions", "rewind", id, "--turn", "0", "--code", "--yes", "--force")
	if code != 0 {
		t.Fatalf("rewind --force: code %d %q %q", code, out, errOut)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(work, p)); return string(b) }
	if read("a.txt") != "hello\n" || read("b.txt") != "keep\n" {
		t.Fatalf("not put back: a=%q b=%q", read("a.txt"), read("b.txt"))
	}
	if _, err := os.Stat(filepath.Join(work, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("new.txt not removed: %v", err)
	}

	// A fork at turn 0 takes the files as they were then into a new
	// directory, where the fork works.
	forkDir := filepath.Join(t.TempDir(), "fork")
	out, errOut, code = run(t, work, env, "sessions", "fork", id, "--turn", "0", "--code", forkDir)
	if code != 0 {
		t.Fatalf("fork --code: code %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(forkDir, "a.txt")); string(b) != "hello\n" {
		t.Fatalf("fork's a.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(forkDir, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("fork has new.txt: %v", err)
	}
	forks, _, _ := run(t, forkDir, env, "sessions", "list")
	if !strings.Contains(forks, strings.TrimSpace(out)[:8]) {
		t.Fatalf("the fork does not work in its directory: %q", forks)
	}
}
