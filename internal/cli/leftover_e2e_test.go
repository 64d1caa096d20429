//go:build linux

package cli_test

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// TestReopenKillsLeftovers kills meka with SIGKILL while an unrestricted
// command runs with a background child, which survives its shell (no PID
// namespace at unrestricted); the next meka to hold the session kills it.
func TestReopenKillsLeftovers(t *testing.T) {
	work, data := t.TempDir(), t.TempDir()
	// The command hands over its child's pid as soon as it has one: meka
	// notes a command before starting it, so there is no window in which
	// a kill leaves the child untracked.
	command := `sleep 300 & echo $! > pid; sleep 300`
	args, _ := json.Marshal(map[string]string{"command": command})
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"s1","name":"shell_execute","arguments":` + string(args) + `}]},
	 {"text":"next"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	if err := unix.Mkfifo(work+"/pid", 0o600); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATA_DIR="+data)
	cmd, _ := startOneshot(t, work, env, "--oneshot", "--permission", "unrestricted", "start it")
	b, err := os.ReadFile(work + "/pid") // returns once the child wrote its pid
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Kill(pid, unix.SIGKILL) })
	cmd.Process.Kill()
	cmd.Wait()
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the background child died with meka already (%v); nothing left to test", err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	if out, errOut, code := run(t, work, env, "-c", "--oneshot", "--permission", "unrestricted", "go on"); code != 0 {
		t.Fatalf("continue: code %d stdout %q stderr %q", code, out, errOut)
	}
	if !testenv.Exited(t, fd, 10*time.Second) {
		t.Fatal("the reopened session did not kill what the dead holder left running")
	}
}
