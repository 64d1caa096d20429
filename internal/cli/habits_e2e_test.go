package cli_test

import (
	"strings"
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
