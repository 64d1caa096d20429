package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// eventSchema compiles docs/events.schema.json.
func eventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type jsonLine struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	Data      json.RawMessage `json:"data"`
	raw       string
}

// jsonLines checks every line of out against the schema and decodes it.
func jsonLines(t *testing.T, schema *jsonschema.Schema, out string) []jsonLine {
	t.Helper()
	var lines []jsonLine
	for i, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(l))
		if err != nil {
			t.Fatalf("line %d is not JSON: %q", i+1, l)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("line %d: %s\n%v", i+1, l, err)
		}
		var jl jsonLine
		json.Unmarshal([]byte(l), &jl)
		jl.raw = l
		lines = append(lines, jl)
	}
	return lines
}

func types(lines []jsonLine) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l.Type)
	}
	return out
}

// --oneshot --json: every line is an event of the documented schema, the
// first names the session, and the durable ones are, id for id and byte
// for byte, what `meka serve`'s feed sends for the session.
func TestOneshotJSONIsTheFeed(t *testing.T) {
	srv := serve(t, `[
	 {"tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["read the file"]}}],"usage":{"input_tokens":10,"output_tokens":2}},
	 {"tool_calls":[{"id":"b","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}}],"usage":{"input_tokens":12,"output_tokens":2}},
	 {"text":"All read.","usage":{"input_tokens":14,"output_tokens":3}}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	out, errOut, code := run(t, work, env, "--oneshot", "--json", "read it")
	if code != 0 {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	lines := jsonLines(t, eventSchema(t), out)
	got := strings.Join(types(lines), " ")
	want := "session.started message.created turn.started tool.started tool.finished checklist.updated " +
		"tool.started tool.finished checklist.updated message.created turn.completed"
	if got != want {
		t.Fatalf("types\n got %s\nwant %s\n%s", got, want, out)
	}
	id := lines[0].SessionID
	var started struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(lines[0].Data, &started)
	if id == "" || started.SessionID != id || lines[0].ID != "" {
		t.Fatalf("first line %s", lines[0].raw)
	}
	var done struct {
		Status string `json:"status"`
		Usage  struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(lines[len(lines)-1].Data, &done)
	if done.Status != "completed" || done.Usage.Input != 36 || done.Usage.Output != 7 {
		t.Fatalf("turn.completed %s", lines[len(lines)-1].raw)
	}

	// The same turn as meka serve's feed has it.
	s := startServe(t, work, env)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/v1/sessions/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Last-Event-ID", "0")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("feed: %v %v", res, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var feed []string
	for len(feed) < len(lines)-1 && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			feed = append(feed, d)
		}
	}
	for i, l := range lines[1:] {
		if l.ID == "" {
			t.Errorf("line %d has no id: %s", i+2, l.raw)
		}
		if i >= len(feed) || feed[i] != l.raw {
			t.Errorf("line %d\n--json %s\n  feed %s", i+2, l.raw, feed[min(i, len(feed)-1)])
		}
	}
}

// A failed turn ends --json with turn.failed carrying the problem, and
// the exit status is the one without --json.
func TestOneshotJSONTurnFailed(t *testing.T) {
	srv := serve(t, `[{"error":{"status":400,"body":"model not found"}}]`)
	env := configured(t, srv, "")
	out, _, code := run(t, t.TempDir(), env, "--oneshot", "--json", "hi")
	if code != 1 {
		t.Fatalf("code %d", code)
	}
	lines := jsonLines(t, eventSchema(t), out)
	last := lines[len(lines)-1]
	if last.Type != "turn.failed" || !strings.Contains(last.raw, "model not found") || !strings.Contains(last.raw, `"provider-failed"`) {
		t.Fatalf("last line %s", last.raw)
	}

	// A run that fails before its turn (here, a bad level) still ends
	// the stream it began, with the exit status it always had.
	out, errOut, code := run(t, t.TempDir(), env, "--oneshot", "--json", "--permission", "sudo", "hi")
	lines = jsonLines(t, eventSchema(t), out)
	if code != 2 || len(lines) != 2 || lines[0].Type != "session.started" || lines[1].Type != "turn.failed" ||
		!strings.Contains(lines[1].raw, `"start-failed"`) || !strings.Contains(errOut, "sudo") {
		t.Fatalf("code %d stdout %s stderr %s", code, out, errOut)
	}
}

// Text mode is for scripts: stdout is the final reply alone, the rounds
// before it and the tool cards are not on it; -v names the session on
// stderr.
func TestOneshotStdoutIsTheFinalReply(t *testing.T) {
	srv := serve(t, `[
	 {"text":"Let me look.","tool_calls":[{"id":"a","name":"checklist_add","arguments":{"items":["look"]}}]},
	 {"tool_calls":[{"id":"b","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}}]},
	 {"text":"It is fine."}]`)
	env := configured(t, srv, "")
	out, errOut, code := run(t, t.TempDir(), env, "--oneshot", "-v", "check")
	if code != 0 || out != "It is fine.\n" {
		t.Fatalf("code %d stdout %q stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "meka: session ") || !strings.Contains(errOut, "Let me look.") {
		t.Fatalf("stderr %q", errOut)
	}
}

// --json and --input-format without --oneshot are refused, not ignored.
func TestJSONNeedsOneshot(t *testing.T) {
	env := isolatedEnv(t, "OPENAI_API_KEY=k")
	for _, args := range [][]string{{"--json", "hi"}, {"--input-format", "stream-json"}} {
		if _, errOut, code := run(t, t.TempDir(), env, args...); code != 2 || !strings.Contains(errOut, "--oneshot's") {
			t.Errorf("%v: code %d %q", args, code, errOut)
		}
	}
}

func runIn(t *testing.T, dir string, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// A prompt piped in is the prompt; with an argument too, stdin is the
// context and the argument the ask; `-` reads stdin explicitly; more than
// max_request_bytes is refused before a session exists.
func TestOneshotPipedInput(t *testing.T) {
	srv := serve(t, `[{"text":"one"},{"text":"two"},{"text":"three"}]`)
	env := configured(t, srv, "")
	work := t.TempDir()
	if out, errOut, code := runIn(t, work, env, "the build log says FAIL\n", "--oneshot"); code != 0 || out != "one\n" {
		t.Fatalf("piped: code %d %q %q", code, out, errOut)
	}
	if out, errOut, code := runIn(t, work, env, "panic: nil map\n", "--oneshot", "why did it fail?"); code != 0 || out != "two\n" {
		t.Fatalf("combined: code %d %q %q", code, out, errOut)
	}
	if out, errOut, code := runIn(t, work, env, "explicit words", "--oneshot", "-"); code != 0 || out != "three\n" {
		t.Fatalf("explicit: code %d %q %q", code, out, errOut)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range []string{"the build log says FAIL", `\u003cstdin\u003e\npanic: nil map\n\u003c/stdin\u003e\n\nwhy did it fail?`, "explicit words"} {
		if !bytes.Contains(reqs[i].Body, []byte(want)) && !bytes.Contains(reqs[i].Body, []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(want))) {
			t.Errorf("request %d lacks %q: %s", i, want, reqs[i].Body)
		}
	}
}

func TestOneshotPipedInputOverTheLimit(t *testing.T) {
	srv := serve(t, `[{"text":"never"}]`)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	body := "[profiles.test]\nprovider = \"openai\"\nbase_url = \"" + srv.URL + "/v1\"\napi_key_env = \"TEST_KEY\"\nmodel = \"m\"\nmax_request_bytes = 64\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, "MEKA_CONFIG="+cfg, "TEST_KEY=k")
	work := t.TempDir()
	_, errOut, code := runIn(t, work, env, strings.Repeat("x", 65), "--oneshot", "summarize")
	if code != 2 || !strings.Contains(errOut, "max_request_bytes of 64") {
		t.Fatalf("code %d stderr %q", code, errOut)
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("the model was asked")
	}
	list, _, _ := run(t, work, env, "sessions", "list")
	if strings.Contains(list, "summarize") {
		t.Fatalf("a session was made: %q", list)
	}
}

// --input-format stream-json: a client holds the conversation over one
// process. It answers the approval the turn asks for, steers the turn
// while it waits, and sends a second user message as the next turn.
func TestOneshotStreamJSON(t *testing.T) {
	srv := serve(t, `[
	 {"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"out.txt","content":"approved-and-ran"}}]},
	 {"text":"Ran it."},
	 {"text":"Second turn."}]`)
	env := configured(t, srv, "[permissions]\napprovals = true\n")
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), "--oneshot", "--json", "--input-format", "stream-json", "--permission", "read")
	work := t.TempDir()
	cmd.Dir, cmd.Env = work, env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	send := func(v any) {
		b, _ := json.Marshal(v)
		stdin.Write(append(b, '\n'))
	}
	send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "run the command"}})
	schema := eventSchema(t)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var all []string
	turns := 0
	for turns < 2 && sc.Scan() {
		line := sc.Text()
		all = append(all, line)
		jsonLines(t, schema, line)
		var l struct {
			Type string `json:"type"`
			Data struct {
				ApprovalID string `json:"approval_id"`
			} `json:"data"`
		}
		json.Unmarshal([]byte(line), &l)
		switch l.Type {
		case "approval.requested":
			send(map[string]any{"type": "steer", "text": "also say hi"})
			send(map[string]any{"type": "approval", "approval_id": l.Data.ApprovalID, "decision": "allow"})
		case "turn.completed":
			turns++
			if turns == 1 {
				send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []map[string]string{{"type": "text", "text": "and again"}}}})
				stdin.Close()
			}
		case "turn.failed", "input.rejected":
			t.Fatalf("%s\n%s", line, errOut.String())
		}
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, strings.Join(all, "\n"), errOut.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{`"type":"approval.resolved"`, `"by":"client","decision":"allow"`, `"source":"inbox"`, `"status":"completed","tool":"file_write"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("output lacks %s:\n%s", want, joined)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if !bytes.Contains(reqs[1].Body, []byte("also say hi")) || !bytes.Contains(reqs[1].Body, []byte(`"tool_call_id":"w1"`)) {
		t.Errorf("the steer and the result are not in the next request: %s", reqs[1].Body)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "approved-and-ran" {
		t.Errorf("the approved write: %q %v", b, err)
	}
	if !bytes.Contains(reqs[2].Body, []byte("and again")) {
		t.Errorf("second turn: %s", reqs[2].Body)
	}
}

// A stream-json line meka cannot take is answered with input.rejected
// naming the line, and the conversation goes on; an interrupt line
// cancels the turn waiting on an approval, which is denied by "cancel".
func TestOneshotStreamJSONRejectsAndInterrupts(t *testing.T) {
	srv := serve(t, `[{"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"out.txt","content":"x"}}]}]`)
	env := configured(t, srv, "[permissions]\napprovals = true\n")
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), "--oneshot", "--json", "--input-format", "stream-json", "--permission", "read")
	work := t.TempDir()
	cmd.Dir, cmd.Env = work, env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stdin.Write([]byte("not json\n" + `{"type":"telepathy"}` + "\n" + `{"type":"user","message":{"role":"user","content":"write it"}}` + "\n"))
	schema := eventSchema(t)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var all []string
	for sc.Scan() {
		line := sc.Text()
		all = append(all, line)
		jsonLines(t, schema, line)
		if strings.Contains(line, `"type":"approval.requested"`) {
			stdin.Write([]byte(`{"type":"interrupt"}` + "\n"))
		}
		if strings.Contains(line, `"type":"turn.completed"`) {
			stdin.Close()
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v\n%s", err, strings.Join(all, "\n"))
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{`"line":1,"reason":"not a JSON object`, `"line":2,"reason":"type \"telepathy\"`, `"by":"cancel","decision":"deny"`, `"status":"cancelled"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("output lacks %s:\n%s", want, joined)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "out.txt")); err == nil {
		t.Error("the interrupted call wrote its file")
	}
}

// An MCP server's question reaches a stream-json client as
// elicitation.requested; the client's elicitation line answers it and
// the tool gets the answer.
func TestOneshotStreamJSONElicitation(t *testing.T) {
	server := mcpTestServer(t)
	srv := scripted(t, `[
	 {"tool_calls":[{"id":"c1","name":"mcp__mt__ask","arguments":{"mode":"form"}}]},
	 {"text":"Hello, Ada."}]`)
	cfg := mcpConfig(t, srv.URL, fmt.Sprintf("[mcp.servers.mt]\ncommand = %q\npermission = \"read\"\n", server))
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), "--config", cfg, "--oneshot", "--json", "--input-format", "stream-json", "ask my name")
	cmd.Dir, cmd.Env = t.TempDir(), isolatedEnv(t, "OPENAI_API_KEY=k")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	schema := eventSchema(t)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var all []string
	for sc.Scan() {
		line := sc.Text()
		all = append(all, line)
		jsonLines(t, schema, line)
		var l struct {
			Type string `json:"type"`
			Data struct {
				ID string `json:"elicitation_id"`
			} `json:"data"`
		}
		json.Unmarshal([]byte(line), &l)
		switch l.Type {
		case "elicitation.requested":
			b, _ := json.Marshal(map[string]any{"type": "elicitation", "elicitation_id": l.Data.ID, "action": "accept", "content": map[string]string{"name": "Ada"}})
			stdin.Write(append(b, '\n'))
		case "turn.completed", "turn.failed":
			stdin.Close()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s\n%s", err, strings.Join(all, "\n"), errOut.String())
	}
	joined := strings.Join(all, "\n")
	if !strings.Contains(joined, `"action":"accept","by":"client"`) || !strings.Contains(joined, `accept {\"name\":\"Ada\"}`) {
		t.Fatalf("output:\n%s\n%s", joined, errOut.String())
	}
}
