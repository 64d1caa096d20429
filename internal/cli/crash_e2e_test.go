package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"meka.dev/meka/internal/sqlite"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/model"
	"meka.dev/meka/model/modeltest"
	"meka.dev/meka/model/script"
	"meka.dev/meka/session"
)

// writesScript is a turn of rounds, each writing several files with
// file_write, then a final reply.
func writesScript(t *testing.T, rounds, perRound int) *script.Script {
	t.Helper()
	var rs []string
	for r := range rounds {
		var calls []string
		for c := range perRound {
			calls = append(calls, fmt.Sprintf(`{"id":"r%dc%d","name":"file_write","arguments":{"path":"out/r%dc%d.txt","content":"round %d call %d"}}`, r, c, r, c, r, c))
		}
		rs = append(rs, fmt.Sprintf(`{"text":"round %d","tool_calls":[%s]}`, r, strings.Join(calls, ",")))
	}
	rs = append(rs, `{"text":"all written"}`)
	s, err := script.Parse([]byte(`{"rounds":[` + strings.Join(rs, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startOneshot starts `meka --oneshot` and returns it with its stderr as
// lines, one per event the one-shot front door prints.
func startOneshot(t *testing.T, dir string, env []string, args ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(mekaBinary(t), args...)
	cmd.Dir, cmd.Env = dir, env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stderr)
}

// sessionRows reads the only session of a data directory.
func sessionRows(t *testing.T, dataDir string) []session.Row {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(dataDir, "meka.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	metas, err := db.Sessions().List(t.Context(), session.ListOptions{})
	if err != nil || len(metas.Sessions) != 1 {
		t.Fatalf("sessions: %+v %v", metas, err)
	}
	rows, err := db.Sessions().Rows(t.Context(), metas.Sessions[0].ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// A kill -9 at any moment of a turn leaves every file a tool wrote with
// its call in the log; reopening closes each unanswered call once, and the
// next request pairs every call with a result, as OpenAI requires.
func TestKilledMidTurnLosesNothing(t *testing.T) {
	const runs, rounds, perRound = 50, 6, 3
	rnd := rand.New(rand.NewPCG(testenv.Seed(t), 0))
	for i := range runs {
		work := t.TempDir()
		data := t.TempDir()
		srv := modeltest.NewServer(t, writesScript(t, rounds, perRound))
		env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATA_DIR="+data)

		cmd, lines := startOneshot(t, work, env, "--oneshot", "--permission", "workspace", "write the files")
		// Kill after a random number of printed events: tool starts and
		// results, so the kill lands anywhere between a write and its row.
		killAt := 1 + rnd.IntN(rounds*perRound)
		seen := 0
		for seen < killAt && lines.Scan() {
			if strings.HasPrefix(lines.Text(), "›") {
				seen++
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		// Every file a file_write made has its call in the log.
		called := map[string]bool{}
		for _, r := range sessionRows(t, data) {
			if a, ok := r.Entry.(session.AssistantMessage); ok {
				for _, p := range a.Parts {
					if c, ok := p.(model.ToolCall); ok {
						var args struct{ Path string }
						json.Unmarshal(c.Arguments, &args)
						called[args.Path] = true
					}
				}
			}
		}
		files, _ := filepath.Glob(filepath.Join(work, "out", "*.txt"))
		for _, f := range files {
			if !called["out/"+filepath.Base(f)] {
				t.Errorf("run %d (killed after %d events): %s on disk with no call in the log", i, killAt, filepath.Base(f))
			}
		}

		// The next turn continues the session: every call gets exactly one
		// result, and the request the model gets pairs them all.
		next, err := script.Parse([]byte(`{"rounds":[{"text":"resumed"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		srv2 := modeltest.NewServer(t, next)
		env2 := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv2.URL+"/v1", "MEKA_DATA_DIR="+data)
		out, errOut, code := run(t, work, env2, "-c", "--oneshot", "go on")
		if code != 0 || out != "resumed\n" {
			t.Fatalf("run %d: continue: %d %q %q", i, code, out, errOut)
		}
		results := map[string]int{}
		var calls []string
		for _, r := range sessionRows(t, data) {
			switch e := r.Entry.(type) {
			case session.AssistantMessage:
				for _, p := range e.Parts {
					if c, ok := p.(model.ToolCall); ok {
						calls = append(calls, c.ID)
					}
				}
			case session.ToolResult:
				results[e.CallID]++
			}
		}
		for _, id := range calls {
			if results[id] != 1 {
				t.Errorf("run %d: call %s has %d results", i, id, results[id])
			}
		}
		checkPaired(t, srv2.Requests()[0].Body)
	}
}

// checkPaired fails unless every tool call of an OpenAI Chat Completions
// request is answered by a tool message before the next assistant message.
func checkPaired(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	open := map[string]bool{}
	for _, m := range req.Messages {
		switch m.Role {
		case "assistant":
			if len(open) > 0 {
				t.Fatalf("calls %v unanswered before the next assistant message", open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				t.Fatalf("tool message for %q, which no open call has", m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
	}
	if len(open) > 0 {
		t.Fatalf("calls %v unanswered at the end of the request", open)
	}
}

// SIGTERM and SIGHUP end a one-shot turn the way Ctrl+C does: the running
// call is closed, the turn recorded, and the status says which signal.
func TestSignalsEndTheTurn(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGHUP, 129}, {syscall.SIGINT, 130}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			s, err := script.Parse([]byte(`{"rounds":[{"tool_calls":[{"id":"s1","name":"shell_execute","arguments":{"command":"sleep 300"}}]}]}`))
			if err != nil {
				t.Fatal(err)
			}
			srv := modeltest.NewServer(t, s)
			work, data := t.TempDir(), t.TempDir()
			env := isolatedEnv(t, "OPENAI_API_KEY=k", "OPENAI_BASE_URL="+srv.URL+"/v1", "MEKA_DATA_DIR="+data)
			cmd, lines := startOneshot(t, work, env, "--oneshot", "--permission", "unrestricted", "wait")
			for lines.Scan() && !strings.HasPrefix(lines.Text(), "› ") {
			}
			cmd.Process.Signal(tc.sig)
			for lines.Scan() {
			}
			err = cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != tc.code {
				t.Fatalf("exit: %v, want %d", err, tc.code)
			}
			var result *session.ToolResult
			for _, r := range sessionRows(t, data) {
				if tr, ok := r.Entry.(session.ToolResult); ok {
					result = &tr
				}
			}
			if result == nil || result.CallID != "s1" || result.Status != session.StatusCanceled {
				t.Fatalf("result: %+v", result)
			}
			// The lock was released: the session opens at once.
			db, err := sqlite.Open(t.Context(), filepath.Join(data, "meka.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			metas, _ := db.Sessions().List(context.Background(), session.ListOptions{})
			lock, err := db.Sessions().Lock(t.Context(), metas.Sessions[0].ID, session.Holder{PID: os.Getpid(), Host: "elsewhere"})
			if err != nil {
				t.Fatalf("lock after exit: %v", err)
			}
			lock.Release(t.Context())
		})
	}
}
