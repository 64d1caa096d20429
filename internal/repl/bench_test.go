package repl

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

// BenchmarkFrame is one frame's cost in a session of 5,000 rows that the
// screen has shown: committed items left the model, so the frame costs
// what the live region holds (a streaming reply, a running command with
// output, the checklist, a steer, a draft).
func BenchmarkFrame(b *testing.B) {
	f := newFake()
	clk := newClock()
	m := newScreen(context.Background(), f, Options{Width: 120, Height: 40, Now: clk.now})
	m.hold(f)
	ev := func(e agent.Event) { m.Update(eventMsg{sid: f.id, ev: e}) }
	for turn := range 1000 {
		msg := session.UserMessage{Parts: model.Parts{model.Text{Text: fmt.Sprintf("question %d", turn)}}}
		ev(agent.TurnStarted{Turn: int64(turn + 1), Input: msg})
		ev(agent.TextChunk{Text: "Looking at it.\n\n"})
		ev(agent.ToolCallStarted{CallID: "c", Name: "shell_execute", Title: "go test ./..."})
		ev(agent.ToolCallFinished{CallID: "c", Result: session.ToolResult{CallID: "c", Name: "shell_execute", Status: session.StatusOK,
			Content: model.Parts{model.Text{Text: "ok\n"}}}})
		ev(agent.TextChunk{Text: "Done."})
		ev(agent.TurnEnded{Result: agent.Result{Stop: agent.StopEndTurn}})
		f.rows = append(f.rows, session.Row{}, session.Row{}, session.Row{}, session.Row{}, session.Row{})
		m.outbox = m.outbox[:0] // printed
	}
	if len(f.rows) != 5000 {
		b.Fatalf("%d rows", len(f.rows))
	}
	ev(agent.TurnStarted{Turn: 1001, Input: session.UserMessage{Parts: model.Parts{model.Text{Text: "go"}}}})
	ev(plan.Changed{Dialect: "checklist", Total: 3, Items: []plan.Item{{Text: "write the query", Status: plan.InProgress},
		{Text: "verify the numbers", Status: plan.Pending}, {Text: "ask Ana", Status: plan.Deferred, Reason: "waiting"}}})
	ev(agent.TextChunk{Text: strings.Repeat("a streaming paragraph that goes on and on ", 40)})
	ev(agent.ToolCallStarted{CallID: "r", Name: "shell_execute", Title: "go build ./..."})
	ev(agent.ToolCallOutput{CallID: "r", Chunk: strings.Repeat("compiling package\n", 200)})
	m.steers = []string{"also check the logs"}
	m.comp.set("a half-typed draft")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clk.add(time.Millisecond)
		v := m.View()
		if v.Content == "" {
			b.Fatal("empty frame")
		}
	}
}

// BenchmarkFirstFrame is the time from starting the built meka on a pty
// to its first frame (the status line on the screen).
func BenchmarkFirstFrame(b *testing.B) {
	bin := benchBinary(b)
	home := b.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[profiles.test]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\napi_key_env = \"TEST_KEY\"\nmodel = \"m\"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color", "NO_COLOR=1",
		"MEKA_DATA_DIR=" + filepath.Join(home, "data"), "MEKA_CONFIG=" + cfg, "TEST_KEY=k"}
	work := b.TempDir()
	var firstByte time.Duration
	b.ResetTimer()
	for b.Loop() {
		cmd := exec.Command(bin)
		cmd.Dir, cmd.Env = work, env
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
		if err != nil {
			b.Fatal(err)
		}
		var seen strings.Builder
		buf := make([]byte, 8<<10)
		start := time.Now()
		for !strings.Contains(seen.String(), "shift+tab level") {
			n, err := ptmx.Read(buf)
			if seen.Len() == 0 && n > 0 {
				firstByte += time.Since(start)
			}
			seen.Write(buf[:n])
			if err != nil {
				b.Fatalf("%v after %q", err, seen.String())
			}
		}
		b.StopTimer()
		cmd.Process.Kill()
		go io.Copy(io.Discard, ptmx)
		cmd.Wait()
		ptmx.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(firstByte.Microseconds())/float64(b.N), "µs-to-first-byte/op")
}

func benchBinary(b *testing.B) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "meka-screen-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "meka")
		out, err := exec.Command("go", "build", "-o", binPath, "meka.dev/meka/cmd/meka").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build meka: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binPath
}

// BenchmarkScreenFirstFrame is the screen's own part of the time to the
// first frame: from Run to the first write on a pty, with the session
// already open.
func BenchmarkScreenFirstFrame(b *testing.B) {
	for b.Loop() {
		ptmx, tty, err := pty.Open()
		if err != nil {
			b.Fatal(err)
		}
		if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
			b.Fatal(err)
		}
		go io.Copy(io.Discard, ptmx)
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			Run(ctx, newFake(), Options{In: tty, Out: tty, Now: time.Now, Ready: func() { close(ready) }})
		}()
		<-ready
		b.StopTimer()
		cancel()
		<-done
		tty.Close()
		ptmx.Close()
		b.StartTimer()
	}
}
