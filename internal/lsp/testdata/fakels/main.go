// Command fakels is a language server for the tests, in one of three
// modes given as its argument: "echo" publishes, for every change, one
// error per line containing "bad"; "hang" answers initialize and then
// nothing; "crash" answers initialize and exits with status 3 at the
// first document it is sent.
package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"

	"go.lsp.dev/jsonrpc2"
)

type rwc struct{}

func (rwc) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (rwc) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (rwc) Close() error                { return nil }

type doc struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
	Text    string `json:"text"`
}

func main() {
	mode := os.Args[1]
	conn := jsonrpc2.NewConn(jsonrpc2.NewStream(rwc{}))
	ctx := context.Background()
	initialized := false
	conn.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case "initialize":
			initialized = true
			return map[string]any{"capabilities": map[string]any{"textDocumentSync": 1}}, nil
		case "shutdown":
			return nil, nil
		case "exit":
			os.Exit(0)
		}
		if mode == "hang" && initialized {
			select {} // reads nothing more: the connection is stuck
		}
		var p struct {
			TextDocument   doc `json:"textDocument"`
			ContentChanges []struct {
				Text string `json:"text"`
			} `json:"contentChanges"`
		}
		switch req.Method() {
		case "textDocument/didOpen", "textDocument/didChange":
			if mode == "crash" {
				os.Exit(3)
			}
			_ = json.Unmarshal(req.Params(), &p)
			text := p.TextDocument.Text
			if n := len(p.ContentChanges); n > 0 {
				text = p.ContentChanges[n-1].Text
			}
			var diags []map[string]any
			for i, line := range strings.Split(text, "\n") {
				if c := strings.Index(line, "bad"); c >= 0 {
					diags = append(diags, map[string]any{
						"range":    map[string]any{"start": map[string]int{"line": i, "character": c}, "end": map[string]int{"line": i, "character": c + 3}},
						"severity": 1, "source": "fakels", "message": "bad word",
					})
				}
			}
			if diags == nil {
				diags = []map[string]any{}
			}
			return nil, conn.Notify(ctx, "textDocument/publishDiagnostics", map[string]any{
				"uri": p.TextDocument.URI, "version": p.TextDocument.Version, "diagnostics": diags})
		}
		if req.IsCall() {
			return nil, jsonrpc2.ErrMethodNotFound
		}
		return nil, nil
	})
	<-conn.Done()
}
