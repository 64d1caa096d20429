// Command mcptestserver serves mcptest's server on stdio, for end-to-end
// tests of meka as an MCP client. MCPTEST_SILENT=1 makes it read and never
// answer (a server that hangs at initialize); MCPTEST_HUNG names a file a
// line is appended to when a hanging call is cancelled; MCPTEST_DELAY (a
// Go duration) is how long it takes to start, for the benchmarks.
// MCPTEST_EXIT (CODE:TEXT) writes TEXT to stderr and exits with CODE
// before reading anything. MCPTEST_TOOLS (a JSON array) serves a raw
// server listing those tools verbatim, which the SDK's server would
// refuse to list (an inputSchema that is not an object).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/mcp/mcptest"
)

func main() {
	if code, text, ok := strings.Cut(os.Getenv("MCPTEST_EXIT"), ":"); ok {
		fmt.Fprintln(os.Stderr, text)
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	if tools := os.Getenv("MCPTEST_TOOLS"); tools != "" {
		serveRaw(json.RawMessage(tools))
		return
	}
	if os.Getenv("MCPTEST_SILENT") == "1" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	if d, err := time.ParseDuration(os.Getenv("MCPTEST_DELAY")); err == nil {
		time.Sleep(d) // a slow server's start, as the benchmarks model it
	}
	o := mcptest.Options{}
	if path := os.Getenv("MCPTEST_HUNG"); path != "" {
		o.Hung = func(s string) {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				_, _ = f.WriteString(s + "\n")
				_ = f.Close()
			}
		}
	}
	if err := mcptest.New(o).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// serveRaw answers MCP over stdio by hand: initialize, tools/list with
// tools as given, and tools/call, whose result names the tool; any other
// request is method not found (server/discover included, so that the
// client falls back to initialize).
func serveRaw(tools json.RawMessage) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				Name            string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue // a notification, or a response
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch m.Method {
		case "initialize":
			reply["result"] = map[string]any{"protocolVersion": m.Params.ProtocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "raw", "version": "1"}}
		case "tools/list":
			reply["result"] = map[string]any{"tools": tools}
		case "tools/call":
			reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": m.Params.Name + " ran"}}}
		case "ping":
			reply["result"] = map[string]any{}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "method not found: " + m.Method}
		}
		if out.Encode(reply) != nil {
			return
		}
	}
}
