// Command mcptestserver serves mcptest's server on stdio, for end-to-end
// tests of meka as an MCP client. MCPTEST_SILENT=1 makes it read and never
// answer (a server that hangs at initialize); MCPTEST_HUNG names a file a
// line is appended to when a hanging call is cancelled; MCPTEST_DELAY (a
// Go duration) is how long it takes to start, for the benchmarks.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"meka.dev/meka/internal/mcp/mcptest"
)

func main() {
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
