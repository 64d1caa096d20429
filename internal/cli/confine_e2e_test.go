package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
)

// acpLine is one message meka acp wrote.
type acpLine struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Params struct {
		Update map[string]any `json:"update"`
	} `json:"params"`
}

// With no confinement backend (MEKA_SANDBOX=off, as in a container with
// neither Landlock nor user namespaces), meka acp still serves: a session
// at workspace is told which guarantees are missing and what to do, its
// shell command is refused rather than run unconfined, and stderr says the
// same once.
func TestACPWithoutConfinement(t *testing.T) {
	s, err := script.Parse([]byte(`{"rounds":[
	 {"tool_calls":[{"id":"c1","name":"shell_execute","arguments":{"command":"echo ran > ran.txt"}}]},
	 {"text":"done"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := modeltest.NewServer(t, s)
	work := t.TempDir()
	cmd := exec.CommandContext(t.Context(), mekaBinary(t), "acp")
	cmd.Dir = work
	cmd.Env = isolatedEnv(t, "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_SANDBOX=off")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrFile := filepath.Join(t.TempDir(), "stderr")
	ef, err := os.Create(stderrFile)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	cmd.Stderr = ef
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(id int, method string, params any) {
		t.Helper()
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	// read takes the next message, keeping session/update's updates;
	// answer reads up to the answer to a request.
	var updates []map[string]any
	read := func() acpLine {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("meka acp ended: %v", lines.Err())
		}
		var l acpLine
		if err := json.Unmarshal(lines.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", lines.Bytes(), err)
		}
		if l.Method == "session/update" {
			updates = append(updates, l.Params.Update)
		}
		return l
	}
	answer := func(id int) acpLine {
		t.Helper()
		for i := 0; i < 10000; i++ {
			if l := read(); l.ID != nil && *l.ID == id && l.Method == "" {
				if len(l.Error) > 0 {
					t.Fatalf("request %d: error %s", id, l.Error)
				}
				return l
			}
		}
		t.Fatalf("no answer to request %d", id)
		return acpLine{}
	}
	notice := func() map[string]any {
		for _, u := range updates {
			if u["sessionUpdate"] == "notice" {
				return u
			}
		}
		return nil
	}

	send(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"session": map[string]any{"notices": map[string]any{}}}})
	answer(1)
	send(2, "session/new", map[string]any{"cwd": work, "mcpServers": []any{}})
	var created struct {
		SessionID string `json:"sessionId"`
		Modes     struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
	}
	if err := json.Unmarshal(answer(2).Result, &created); err != nil || created.Modes.CurrentModeID != "workspace" {
		t.Fatalf("session/new: %+v, %v", created, err)
	}
	// The notice follows the answer, with the palette.
	for i := 0; i < 20 && notice() == nil; i++ {
		read()
	}
	n := notice()
	if n == nil {
		t.Fatalf("no notice after session/new; updates %v", updates)
	}
	text := fmt.Sprint(n["title"], " ", n["description"])
	for _, want := range []string{"workspace level refuses shell commands", "MEKA_SANDBOX=off", "landlock", "bwrap", "unrestricted", "user namespaces"} {
		if !strings.Contains(text, want) {
			t.Errorf("notice %q does not say %q", text, want)
		}
	}
	if n["severity"] != "warning" {
		t.Errorf("notice severity %v", n["severity"])
	}

	updates = nil
	send(3, "session/prompt", map[string]any{"sessionId": created.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "write the file"}}})
	var done struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(answer(3).Result, &done); err != nil || done.StopReason != "end_turn" {
		t.Fatalf("prompt: %+v %v", done, err)
	}
	if _, err := os.Stat(filepath.Join(work, "ran.txt")); !os.IsNotExist(err) {
		t.Fatalf("the command ran unconfined: ran.txt %v", err)
	}
	var refused bool
	for _, u := range updates {
		if u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed" {
			b, _ := json.Marshal(u)
			refused = strings.Contains(string(b), "refused")
		}
	}
	if !refused {
		t.Errorf("no refused tool call; updates %v", updates)
	}
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("meka acp: %v", err)
	}
	errText, _ := os.ReadFile(stderrFile)
	if strings.Count(string(errText), "meka acp: Commands cannot run confined here") != 1 {
		t.Errorf("stderr %q: want the missing confinement said once", errText)
	}
}
