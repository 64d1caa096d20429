package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// A one-shot turn that delegates: the sub-agent runs under its project
// definition, its session is hidden from the listing, listed by
// --children, and named by show of its parent; a background command is
// refused in it with the reason.
func TestSubAgentEndToEnd(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"sp1","name":"agent_spawn","arguments":{"task":"check the tree","agent":"scout"}}]},
	 {"tool_calls":[{"id":"b1","name":"shell_execute","arguments":{"command":"sleep 1","background":true}}]},
	 {"text":"The tree is fine."},
	 {"text":"Delegated and done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, ".meka", "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\ndescription: Looks around the tree\nmax_turns: 5\n---\nYou are the scout.\n"
	if err := os.WriteFile(filepath.Join(work, ".meka", "agents", "scout.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	out, errOut, code := run(t, work, env, "--oneshot", "--permission", "unrestricted", "delegate it")
	if code != 0 || !strings.Contains(out, "Delegated and done.") {
		t.Fatalf("oneshot: code %d stdout %q stderr %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	parentReq, childReq := string(reqs[0].Body), string(reqs[1].Body)
	if !strings.Contains(parentReq, "scout: Looks around the tree") {
		t.Errorf("agent_spawn's description does not list the definition")
	}
	if !strings.Contains(childReq, "You are the scout.") || strings.Contains(childReq, `"agent_spawn"`) {
		t.Errorf("the sub-agent's request lacks its definition's prompt, or offers agent_spawn at depth 1")
	}
	// A sub-agent has no background tasks, so it is not offered them; a
	// call that asks anyway is refused.
	if strings.Contains(childReq, "Start the command as a background task") || strings.Contains(childReq, "set background: true") {
		t.Errorf("the sub-agent is offered shell_execute's background")
	}
	if refusal := string(reqs[2].Body); !strings.Contains(refusal, "background") || strings.Contains(refusal, "Started background task") {
		t.Errorf("the background command was not refused:\n%s", refusal)
	}

	list, _, code := run(t, work, env, "sessions", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("sessions list shows %d rows, want the parent alone:\n%s", len(lines)-1, list)
	}
	parent := strings.Fields(lines[1])[0]
	kids, _, code := run(t, work, env, "sessions", "list", "--children", parent)
	kidLines := strings.Split(strings.TrimSpace(kids), "\n")
	if code != 0 || len(kidLines) != 2 || !strings.Contains(kids, "scout") {
		t.Fatalf("sessions list --children:\n%s", kids)
	}
	show, _, code := run(t, work, env, "sessions", "show", parent)
	if code != 0 || !strings.Contains(show, "sub-agents (1):") || !strings.Contains(show, "call sp1") {
		t.Fatalf("sessions show of the parent:\n%s", show)
	}
	kid := strings.Fields(kidLines[1])[0]
	showKid, _, code := run(t, work, env, "sessions", "show", kid)
	if code != 0 || !strings.Contains(showKid, "agent:   scout") || !strings.Contains(showKid, "The tree is fine.") {
		t.Fatalf("sessions show of the child:\n%s", showKid)
	}
	if _, errOut, code := run(t, work, env, "sessions", "fork", kid); code == 0 || !strings.Contains(errOut, "agent_followup") {
		t.Errorf("sessions fork of a sub-agent: code %d %q, want refused", code, errOut)
	}
	if _, errOut, code := run(t, work, env, "-r", kid, "--oneshot", "hi"); code == 0 || !strings.Contains(errOut, "agent_followup") {
		t.Errorf("meka -r of a sub-agent: code %d %q, want refused", code, errOut)
	}
}
