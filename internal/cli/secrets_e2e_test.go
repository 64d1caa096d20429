package cli_test

import (
	"bytes"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// TestKeyNotInEnviron runs the meka binary with its provider key in the
// environment and a command at unrestricted that reads meka's
// /proc/<pid>/environ: meka keeps the key for its requests but the block
// holds it no more.
func TestKeyNotInEnviron(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"s1","name":"shell_execute","arguments":{"command":"tr '\\0' '\\n' < /proc/$PPID/environ; echo MARK=$MEKA_MARK"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test-hidden-key", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_MARK=seen")
	out, errOut, code := run(t, t.TempDir(), env, "--oneshot", "--permission", "unrestricted", "read it")
	if code != 0 || out != "done\n" {
		t.Fatalf("oneshot: code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test-hidden-key" {
			t.Errorf("request %d authorization %q: the key was not kept in memory", i, got)
		}
	}
	result := reqs[1].Body
	if !bytes.Contains(result, []byte("MEKA_MARK=seen")) || !bytes.Contains(result, []byte("MARK=seen")) {
		t.Fatalf("the command did not read meka's environ: %s", result)
	}
	if bytes.Contains(result, []byte("sk-test-hidden")) || strings.Contains(string(result), "OPENAI_API_KEY") {
		t.Errorf("meka's /proc/<pid>/environ still holds the key: %s", result)
	}
}

// TestWorkspaceHomeRefused starts meka in $HOME at the default workspace
// level: refused with the reason unless --workspace-home or a lower level.
func TestWorkspaceHomeRefused(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[{"text":"ok"},{"text":"ok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	home := strings.TrimPrefix(env[0], "HOME=")
	_, errOut, code := run(t, home, env, "--oneshot", "hi")
	if code != 2 || !strings.Contains(errOut, "your home directory") || !strings.Contains(errOut, "--workspace-home") {
		t.Fatalf("in $HOME: code %d stderr %q", code, errOut)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a refused start reached the model")
	}
	for _, args := range [][]string{{"--workspace-home", "--oneshot", "hi"}, {"--permission", "read", "--oneshot", "hi"}} {
		if out, errOut, code := run(t, home, env, args...); code != 0 || out != "ok\n" {
			t.Errorf("%v: code %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
}
