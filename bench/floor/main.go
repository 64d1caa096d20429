// Command floor is the smallest agent that speaks enough ACP for the
// benchmark: initialize, session/new and session/prompt, the prompt sent
// as one streamed Chat Completions request to $OPENAI_BASE_URL. It is the
// floor meka is measured against: what any Go agent pays to start, parse
// JSON and call a model. It imports nothing from meka and is never built
// into it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

// complete sends prompt to the model and returns the body's length.
func complete(prompt string) int {
	body, _ := json.Marshal(map[string]any{"model": "m", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest("POST", os.Getenv("OPENAI_BASE_URL")+"/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+os.Getenv("OPENAI_API_KEY"))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return int(n)
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "-oneshot" {
		fmt.Println(complete(os.Args[2]))
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				SessionID string `json:"sessionId"`
				Prompt    []struct {
					Text string `json:"text"`
				} `json:"prompt"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		var result any
		switch m.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}}
		case "session/new":
			result = map[string]any{"sessionId": "floor"}
		case "session/prompt":
			n := complete(m.Params.Prompt[0].Text)
			out.Encode(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": m.Params.SessionID,
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": fmt.Sprint(n)}}}})
			result = map[string]any{"stopReason": "end_turn"}
		}
		out.Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
	}
}
