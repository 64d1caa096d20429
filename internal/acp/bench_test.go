package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// chunkProvider answers at once with n text chunks: a zero-latency model,
// so a turn's time is meka's own.
type chunkProvider struct{ n int }

func (chunkProvider) Name() string { return "bench" }

func (p chunkProvider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Event, error] {
	return func(yield func(model.Event, error) bool) {
		var text strings.Builder
		for i := range p.n {
			s := fmt.Sprintf("chunk %d. ", i)
			text.WriteString(s)
			if !yield(model.TextDelta{Text: s}, nil) {
				return
			}
		}
		yield(model.Completed{Response: model.Response{
			Message: model.Message{Role: model.RoleAssistant, Parts: model.Parts{model.Text{Text: text.String()}}},
			Usage:   model.Usage{InputTokens: 100, OutputTokens: 20}, Stop: model.StopEndTurn,
		}}, nil)
	}
}

// BenchmarkTurn is the harness overhead of a turn: session/prompt sent to
// its response, with a zero-latency model streaming 20 text chunks (each
// an agent_message_chunk on the wire) and the turn's rows stored.
func BenchmarkTurn(b *testing.B) {
	h := newHarness(b, harnessOptions{provider: chunkProvider{n: 20}, window: 100000})
	h.countOnly = true
	id := h.newSession()
	req := PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock("go")}}
	b.ResetTimer()
	for b.Loop() {
		var r PromptResponse
		if err := h.client.Call(context.Background(), "session/prompt", req, &r); err != nil || r.StopReason != "end_turn" {
			b.Fatal(r, err)
		}
		h.take()
	}
}

// BenchmarkNewSession is session/new to its response.
func BenchmarkNewSession(b *testing.B) {
	h := newHarness(b, harnessOptions{})
	req := NewSessionRequest{Cwd: h.cwd, McpServers: []json.RawMessage{}}
	for b.Loop() {
		var r NewSessionResponse
		if err := h.client.Call(context.Background(), "session/new", req, &r); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.call("session/close", SessionIDRequest{SessionID: r.SessionID}, nil)
		h.take()
		b.StartTimer()
	}
}

// BenchmarkLoad2000 is session/load of a 2,000-row session: its replay
// and its response.
func BenchmarkLoad2000(b *testing.B) {
	h := newHarness(b, harnessOptions{})
	h.countOnly = true
	id := h.newSession()
	h.call("session/close", SessionIDRequest{SessionID: id}, nil)
	var rows []session.Row
	for i := range 500 {
		rows = append(rows,
			session.Row{Turn: int64(i + 1), Entry: session.UserMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("question %d about the code", i)}}}},
			session.Row{Turn: int64(i + 1), Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "Let me look."},
				model.ToolCall{ID: fmt.Sprint("c", i), Name: "file_read", Arguments: json.RawMessage(`{"path":"a.go"}`)}}}},
			session.Row{Turn: int64(i + 1), Entry: session.ToolResult{CallID: fmt.Sprint("c", i), Name: "file_read", Status: session.StatusOK,
				Content: model.Parts{model.Text{Text: strings.Repeat("line of code\n", 20)}}}},
			session.Row{Turn: int64(i + 1), Entry: session.AssistantMessage{Parts: model.Parts{model.Text{Text: "Here is what it does."}}}},
		)
	}
	if _, err := h.host.Store().Append(context.Background(), id, rows); err != nil {
		b.Fatal(err)
	}
	req := LoadSessionRequest{SessionID: id, Cwd: h.cwd, McpServers: []json.RawMessage{}}
	for b.Loop() {
		if err := h.client.Call(context.Background(), "session/load", req, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if n := len(h.take()); n < 2000 {
			b.Fatalf("replayed %d updates", n)
		}
		h.call("session/close", SessionIDRequest{SessionID: id}, nil)
		h.take()
		b.StartTimer()
	}
}

// BenchmarkSpawnInitialize is process start to the initialize response of
// the built meka acp, or of the agent ACP_BENCH_AGENT names (a command
// line, such as "codex-acp"), for comparison.
func BenchmarkSpawnInitialize(b *testing.B) {
	argv, env := benchAgent(b)
	line := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"
	for b.Loop() {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		if _, err := in.Write([]byte(line)); err != nil {
			b.Fatal(err)
		}
		resp, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.Contains(resp, `"protocolVersion"`) {
			b.Fatalf("initialize: %q %v", resp, err)
		}
		b.StopTimer()
		in.Close()
		_ = cmd.Wait()
		b.StartTimer()
	}
}

// benchAgent returns the command to benchmark and its environment.
func benchAgent(b *testing.B) ([]string, []string) {
	if a := os.Getenv("ACP_BENCH_AGENT"); a != "" {
		return strings.Fields(a), os.Environ()
	}
	bin := mekaBin(b)
	home := b.TempDir()
	sc := filepath.Join(home, "script.json")
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(sc, []byte(`{"rounds":[]}`), 0o644)
	os.WriteFile(cfg, []byte("[profiles.bench]\nprovider = \"script\"\nscript = \"script.json\"\n"), 0o644)
	return []string{bin, "acp"}, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MEKA_CONFIG=" + cfg, "MEKA_DATA_DIR=" + filepath.Join(home, "data")}
}

// mekaBin builds cmd/meka for the benchmark.
func mekaBin(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "meka")
	if out, err := exec.Command("go", "build", "-o", bin, "meka.dev/meka/cmd/meka").CombinedOutput(); err != nil {
		b.Fatalf("build meka: %v\n%s", err, out)
	}
	return bin
}
