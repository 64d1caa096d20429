package cli_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A line too long for the terminal is refused with exit 2 and leaves no
// session behind: a session is created only once its first input is
// accepted.
func TestOverlongLineLeavesNoSession(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"text":"unused"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1")
	cmd := exec.Command(mekaBinary(t))
	cmd.Dir, cmd.Env = work, env
	cmd.Stdin = strings.NewReader(strings.Repeat("x", 20<<20) + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, stderr %q", err, stderr.String())
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("the model was called")
	}
	list, _, _ := run(t, work, env, "sessions", "list", "--json")
	if strings.Contains(list, `"id"`) {
		t.Fatalf("a session was left behind: %s", list)
	}
}
