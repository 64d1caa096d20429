package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/tool"
)

// BenchmarkStartThreeServers starts three stdio servers that take 50ms,
// 100ms and 200ms to come up, and waits for all of them, as a turn does:
// started in parallel, the wait is the slowest server's start, not the
// sum. ms/slowest is the 200ms server started alone, for comparison.
func BenchmarkStartThreeServers(b *testing.B) {
	start := func(delays ...string) time.Duration {
		var servers []mcp.Server
		for i, d := range delays {
			s := stdio(string(rune('a' + i)))
			s.Env = map[string]string{"MCPTEST_DELAY": d}
			servers = append(servers, s)
		}
		t0 := time.Now()
		m := mcp.New(mcp.Options{Servers: servers, Env: []string{"PATH=" + os.Getenv("PATH")}})
		m.Start(context.Background())
		if err := m.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
		for _, st := range m.Status() {
			if st.State != mcp.StateConnected {
				b.Fatalf("%s: %s", st.Name, st.State)
			}
		}
		d := time.Since(t0)
		_ = m.Close()
		return d
	}
	var three, one time.Duration
	for b.Loop() {
		three += start("50ms", "100ms", "200ms")
		one += start("200ms")
	}
	b.ReportMetric(float64(three.Milliseconds())/float64(b.N), "ms/three")
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/slowest")
}

// BenchmarkToolCallStdio is one call of a tool that does nothing but echo,
// over stdio, through meka's Tool (lookup, validation, the call, result
// mapping): what meka and the transport add beyond the server's own time.
func BenchmarkToolCallStdio(b *testing.B) {
	m := mcp.New(mcp.Options{Servers: []mcp.Server{stdio("t")}, Env: []string{"PATH=" + os.Getenv("PATH")}})
	m.Start(context.Background())
	defer m.Close()
	if err := m.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	r := tool.NewRegistry()
	r.AddSource(m.Source(nil), nil)
	args := json.RawMessage(`{"text":"hi"}`)
	ctx := context.Background()
	for b.Loop() {
		t, ok := r.Get("mcp__t__echo")
		if !ok {
			b.Fatal("no tool")
		}
		if err := r.Validate("mcp__t__echo", args); err != nil {
			b.Fatal(err)
		}
		res, err := t.Run(ctx, tool.Call{Name: "mcp__t__echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkSDKCallStdio is the same call through the SDK alone, without
// meka: the difference to BenchmarkToolCallStdio is meka's own cost.
func BenchmarkSDKCallStdio(b *testing.B) {
	ctx := context.Background()
	c := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil)
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: exec.Command(serverBin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}
