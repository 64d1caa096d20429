package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// configured writes a config whose profile talks to srv over the OpenAI
// wire format, with extra TOML appended, and returns the environment.
func configured(t *testing.T, srv *modeltest.Server, extra string) []string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := fmt.Sprintf("[profiles.test]\nprovider = \"openai\"\nbase_url = %q\napi_key_env = \"TEST_KEY\"\nmodel = \"m\"\n\n%s", srv.URL+"/v1", extra)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return isolatedEnv(t, "MEKA_CONFIG="+cfg, "TEST_KEY=k")
}

func serve(t *testing.T, rounds string) *modeltest.Server {
	t.Helper()
	s, err := script.Parse([]byte(`{"rounds":` + rounds + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return modeltest.NewServer(t, s)
}

func TestOneshotChecklistNudges(t *testing.T) {
	srv := serve(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["write the parser","test the parser"]}}]},
	 {"text":"All done."},{"text":"Done, really."},{"text":"Still done."},{"text":"Done."}]`)
	env := configured(t, srv, "")
	out, errOut, code := run(t, t.TempDir(), env, "--oneshot", "build a parser")
	// The README promises 3 for an unfinished plan.
	if code != 3 {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	for _, want := range []string{"Checklist: 2 open items, continuing, nudge 1 of 3", "nudge 3 of 3", "□ write the parser", "todo_incomplete"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// stdout carries the final message only, for scripts.
	if out != "Done.\n" {
		t.Errorf("stdout %q", out)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (the add, the reply and 3 nudges)", len(reqs))
	}
	if !bytes.Contains(reqs[2].Body, []byte("write the parser")) {
		t.Errorf("the nudge does not list the items: %s", reqs[2].Body)
	}
}

func TestOneshotPlanDialects(t *testing.T) {
	t.Run("update_plan", func(t *testing.T) {
		srv := serve(t, `[
		 {"tool_calls":[{"id":"a","name":"update_plan","arguments":{"plan":[{"step":"read the schema","status":"completed"},{"step":"write the query","status":"in_progress"}]}}]},
		 {"text":"Finished."},{"text":"Finished, I said."}]`)
		env := configured(t, srv, "[tools]\nplan = \"update_plan\"\nmax_completion_nudges = 1\n")
		_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "query")
		if code != 3 || !strings.Contains(errOut, "todo_incomplete") {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
		reqs := srv.Requests()
		first := string(reqs[0].Body)
		if !strings.Contains(first, `"update_plan"`) || !strings.Contains(first, `"patch_plan"`) || strings.Contains(first, "checklist_add") || strings.Contains(first, "write_todos") {
			t.Fatalf("tools offered: %s", first)
		}
		if !strings.Contains(string(reqs[1].Body), `[run plan]`) || !strings.Contains(string(reqs[1].Body), `[~] write the query`) {
			t.Fatalf("no plan reminder in %s", reqs[1].Body)
		}
	})
	t.Run("write_todos", func(t *testing.T) {
		srv := serve(t, `[
		 {"tool_calls":[{"id":"a","name":"write_todos","arguments":{"todos":[{"content":"Research the endpoint","status":"completed"},{"content":"Add tests","status":"pending"}]}}]},
		 {"tool_calls":[{"id":"b","name":"write_todos","arguments":{"updates":[{"id":"s2","status":"completed"}]}}]},
		 {"text":"Done."}]`)
		env := configured(t, srv, "[tools]\nplan = \"write_todos\"\n")
		_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "endpoint")
		if code != 0 {
			t.Fatalf("code %d stderr %q", code, errOut)
		}
		reqs := srv.Requests()
		first := string(reqs[0].Body)
		if !strings.Contains(first, `"write_todos"`) || strings.Contains(first, "checklist_add") || strings.Contains(first, `"update_plan"`) {
			t.Fatalf("tools offered: %s", first)
		}
		if !strings.Contains(string(reqs[1].Body), "Before your final reply, use write_todos") || !strings.Contains(string(reqs[1].Body), "s2") {
			t.Fatalf("no todo list in %s", reqs[1].Body)
		}
	})
}

// Denying one checklist tool turns the whole checklist off, and startup
// says so: no half-working list.
func TestOneshotChecklistDenied(t *testing.T) {
	srv := serve(t, `[{"text":"Nothing to track."}]`)
	env := configured(t, srv, "[tools]\ndeny = [\"checklist_edit\"]\n")
	_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "hi")
	if code != 0 {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "[tools] deny removes checklist_edit, so the checklist is off") {
		t.Errorf("no startup notice:\n%s", errOut)
	}
	if body := string(srv.Requests()[0].Body); strings.Contains(body, "checklist_") {
		t.Errorf("checklist tools offered: %s", body)
	}
}

// With no max_completion_nudges in the config, update_plan and
// write_todos stop a model that keeps replying without a tool call after
// three reminders, and the run exits 3.
func TestOneshotPlanDefaultCap(t *testing.T) {
	srv := serve(t, `[
	 {"tool_calls":[{"id":"a","name":"write_todos","arguments":{"todos":[{"content":"Add tests","status":"pending"}]}}]},
	 {"text":"Done."},{"text":"Done."},{"text":"Done."},{"text":"Done."},{"text":"Done."},{"text":"Done."}]`)
	env := configured(t, srv, "[tools]\nplan = \"write_todos\"\n")
	_, errOut, code := run(t, t.TempDir(), env, "--oneshot", "tests")
	if code != 3 || !strings.Contains(errOut, "todo_incomplete") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if n := len(srv.Requests()); n != 5 {
		t.Fatalf("%d requests, want 5 (the write, the reply and 3 reminders)", n)
	}
}
