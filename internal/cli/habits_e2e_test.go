package cli_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Habits from other agent CLIs: a word after --oneshot is a prompt even
// when it names a command, -p is --oneshot, and typos in flags and under
// command groups are refused with the nearest name and exit 2.

func TestOneshotWordsArePrompts(t *testing.T) {
	srv := serve(t, `[{"text":"one"},{"text":"two"},{"text":"three"}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	for _, args := range [][]string{
		{"--oneshot", "migrate"},
		{"-p", "sessions"},
		{"--profile", "test", "-p", "serve", "now"},
	} {
		out, errOut, code := run(t, work, env, args...)
		if code != 0 || out == "" {
			t.Errorf("meka %q: code %d stdout %q stderr %q", args, code, out, errOut)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, want := range []string{`"migrate"`, `"sessions"`, `"serve now"`} {
		if !strings.Contains(string(reqs[i].Body), want) {
			t.Errorf("request %d lacks %s", i, want)
		}
	}
}

func TestTyposRefusedWithSuggestion(t *testing.T) {
	srv := serve(t, `[{"text":"never"}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "lst"}, "did you mean meka sessions list?"},
		{[]string{"schedule", "lsit"}, "did you mean meka schedule list?"},
		{[]string{"--onshot", "hi"}, "did you mean --oneshot?"},
		{[]string{"--permision", "read", "-p", "hi"}, "did you mean --permission?"},
		{[]string{"sessions", "list", "--al"}, "did you mean --all?"},
	} {
		out, errOut, code := run(t, work, env, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("meka %q: code %d stdout %q stderr %q", tc.args, code, out, errOut)
		}
	}
	// A group alone still shows its help.
	if out, _, code := run(t, work, env, "sessions"); code != 0 || !strings.Contains(out, "list") {
		t.Errorf("meka sessions: code %d %q", code, out)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests reached the model", n)
	}
}

// A provider's refusal says what to change: the key's variable, the base
// URL, the URL that could not be reached.
func TestProviderErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name, rounds, want string
	}{
		{"401", `[{"error":{"status":401,"body":"{\"error\":{\"message\":\"Incorrect API key\"}}"}}]`, "the key in $TEST_KEY was refused by "},
		{"404", `[{"error":{"status":404,"body":"404 page not found"}}]`, "nothing answers at the base URL "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, tc.rounds)
			_, errOut, code := run(t, t.TempDir(), configured(t, srv, ""), "-p", "hi")
			if code != 1 || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, srv.URL+"/v1") {
				t.Fatalf("code %d stderr %q", code, errOut)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
		_, errOut, code := run(t, t.TempDir(), env, "-p", "hi")
		if code != 1 || !strings.Contains(errOut, "cannot reach http://127.0.0.1:1/v1") {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
	})
	t.Run("anthropic /v1", func(t *testing.T) {
		srv := serve(t, `[{"text":"never"}]`)
		env := isolatedEnv(t, "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+srv.URL+"/v1")
		_, errOut, code := run(t, t.TempDir(), env, "-p", "hi")
		if code != 1 || !strings.Contains(errOut, "ends in /v1, and meka adds /v1/messages itself: drop the /v1") {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
	})
}

// OPENAI_BASE_URL gives a configured profile that sets no base_url its
// endpoint (defaults < file < environment), never one that sets it; -v
// says which profile, provider, model and base URL are in use and where
// the URL came from.
func TestBaseURLPrecedence(t *testing.T) {
	srv := serve(t, `[{"text":"via env"},{"text":"via file"}]`)
	dir := t.TempDir()
	cfg := dir + "/config.toml"
	body := "default_profile = \"plain\"\n[profiles.plain]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"TEST_KEY\"\n" +
		"[profiles.pinned]\nprovider = \"openai\"\nmodel = \"p\"\napi_key_env = \"TEST_KEY\"\nbase_url = \"" + srv.URL + "/v1\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, "MEKA_CONFIG="+cfg, "TEST_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1")
	out, errOut, code := run(t, t.TempDir(), env, "-v", "-p", "hi")
	if code != 0 || out != "via env\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	for _, want := range []string{"name=plain", "provider=openai", "model=m", "base_url=" + srv.URL + "/v1", "base_url_from=$OPENAI_BASE_URL"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("-v lacks %q: %q", want, errOut)
		}
	}
	env = isolatedEnv(t, "MEKA_CONFIG="+cfg, "TEST_KEY=k", "OPENAI_BASE_URL=http://127.0.0.1:1/v1")
	out, errOut, code = run(t, t.TempDir(), env, "-v", "--profile", "pinned", "-p", "hi")
	if code != 0 || out != "via file\n" || !strings.Contains(errOut, "base_url_from=config") {
		t.Fatalf("pinned: code %d stdout %q stderr %q", code, out, errOut)
	}
}

// Telling sessions apart: --all names each one's directory, a fork's
// title says it is one, and -c says which session it continues: the one
// used last, not the one created last.
func TestTellingSessionsApart(t *testing.T) {
	srv := serve(t, `[{"text":"a"},{"text":"b"},{"text":"c"},{"text":"d"},{"text":"e"}]`)
	env := configured(t, srv, "")
	work, other := t.TempDir(), t.TempDir()
	if _, errOut, code := run(t, work, env, "-p", "first task"); code != 0 {
		t.Fatalf("first: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, other, env, "-p", "second task"); code != 0 {
		t.Fatalf("second: %d %s", code, errOut)
	}
	if _, errOut, code := run(t, work, env, "-p", "third task"); code != 0 {
		t.Fatalf("third: %d %s", code, errOut)
	}
	list, _, _ := run(t, work, env, "sessions", "list")
	var firstID string
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, "first task") {
			firstID = strings.Fields(l)[0]
		}
	}
	if firstID == "" {
		t.Fatalf("no first session in %q", list)
	}
	// Using the first again makes it the latest of the directory.
	if _, errOut, code := run(t, work, env, "-r", firstID, "-p", "more"); code != 0 {
		t.Fatalf("resume: %d %s", code, errOut)
	}
	_, errOut, code := run(t, work, env, "-c", "-p", "and more")
	if code != 0 || !strings.Contains(errOut, "meka: continuing session "+firstID+", last used ") || !strings.Contains(errOut, ": first task") {
		t.Fatalf("-c: code %d stderr %q", code, errOut)
	}

	forkOut, _, code := run(t, work, env, "sessions", "fork", firstID, "--turn", "1")
	if code != 0 {
		t.Fatalf("fork: %d", code)
	}
	all, _, _ := run(t, work, env, "sessions", "list", "--all")
	inOrderCLI(t, all, "ID", "UPDATED", "DIRECTORY", "PROFILE", "TITLE")
	for _, want := range []string{forkOut[:8], "fork of " + firstID + " at turn 1: first task", filepath.Base(other), "second task"} {
		if !strings.Contains(all, want) {
			t.Errorf("--all lacks %q:\n%s", want, all)
		}
	}
	for _, l := range strings.Split(all, "\n") {
		if strings.Contains(l, "second task") && !strings.Contains(l, filepath.Base(other)) {
			t.Errorf("the directory is not on the session's row: %q", l)
		}
	}
}

// Ctrl+C (SIGINT) ends line mode as a person quitting it: status 0, the
// session named; 130 is --oneshot's alone.
func TestLineModeCtrlCExitsZero(t *testing.T) {
	srv := serve(t, `[{"text":"One."}]`)
	cmd := exec.CommandContext(t.Context(), mekaBinary(t))
	cmd.Dir, cmd.Env = t.TempDir(), configured(t, srv, "")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "first\n")
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no reply: %v; stderr %q", err, errOut.String())
		}
		if strings.Contains(line, "One.") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGINT)
	go io.Copy(io.Discard, r)
	err = cmd.Wait()
	if err != nil {
		t.Fatalf("exit: %v; stderr %q", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "Resume this session with: meka -r ") {
		t.Fatalf("stderr %q", errOut.String())
	}
}
