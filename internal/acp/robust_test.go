package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/internal/acp/jsonrpc"
	"meka.dev/meka/session"
)

// TestMalformedInput feeds lines no client should send: each gets its
// JSON-RPC error and the connection keeps serving.
func TestMalformedInput(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	cases := []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`, -32700},
		{`not json at all`, -32700},
		{`[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, -32600},
		{`{"jsonrpc":"2.0","id":3,"method":"session/teleport","params":{}}`, -32601},
		{`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":42,"mcpServers":"none"}}`, -32602},
		{`{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":["x"],"modeId":1}}`, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s","prompt":{"type":"text"}}}`, -32602},
		{`{"jsonrpc":"2.0","id":7,"method":"session/load","params":null}`, -32602},
	}
	for _, c := range cases {
		resp := h.raw(c.line + "\n")
		var m struct {
			Error *jsonrpc.Error `json:"error"`
		}
		if err := json.Unmarshal([]byte(resp), &m); err != nil || m.Error == nil || m.Error.Code != c.code {
			t.Errorf("%s\n  answered %s, want code %d", c.line, resp, c.code)
		}
	}
	// Unknown notifications are ignored, and the connection still serves.
	h.raw(`{"jsonrpc":"2.0","method":"session/whatever","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	var resp InitializeResponse
	h.call("initialize", InitializeRequest{ProtocolVersion: 1}, &resp)
}

// hugeReader is one line of n bytes of a JSON string, then a newline,
// without holding it in memory.
type hugeReader struct {
	head, tail string
	n          int
	pos        int
}

func (r *hugeReader) Read(p []byte) (int, error) {
	total := len(r.head) + r.n + len(r.tail)
	if r.pos >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(p) && r.pos < total {
		switch {
		case r.pos < len(r.head):
			p[i] = r.head[r.pos]
		case r.pos < len(r.head)+r.n:
			p[i] = 'x'
		default:
			p[i] = r.tail[r.pos-len(r.head)-r.n]
		}
		i++
		r.pos++
	}
	return i, nil
}

// TestHugeLine sends a 100 MiB prompt: past the line limit it is answered
// with an error, and the connection keeps serving.
func TestHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 100 MiB")
	}
	h := newHarness(t, harnessOptions{})
	id := h.newSession()
	before := len(h.wireKinds())
	r := &hugeReader{head: `{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"`,
		n: 100 << 20, tail: `"}]}}` + "\n"}
	if _, err := io.Copy(h.rawW, r); err != nil {
		t.Fatal(err)
	}
	// The answer to a line that is not served as a request is written on
	// its own goroutine, in no order with the answers to later lines: wait
	// for it by its id rather than behind another call.
	got := h.awaitWire(before, func(l string) bool { return strings.Contains(l, `"id":"big"`) })
	if !strings.Contains(got, `"code":-32600`) {
		t.Fatalf("the oversize line was answered %q", got)
	}
	if resp := h.prompt(id, "/status"); resp.StopReason != "end_turn" {
		t.Fatalf("after the huge line: %+v", resp)
	}
}

// TestPromptStorm fires 1,000 prompts at 20 sessions at once: each is
// answered (a turn, or InvalidParams for a session already busy), nothing
// crashes, and every session's log is whole afterwards.
func TestPromptStorm(t *testing.T) {
	const sessions, prompts = 20, 1000
	rounds := strings.Repeat(`{"text":"ok"},`, prompts)
	h := newHarness(t, harnessOptions{rounds: "[" + strings.TrimSuffix(rounds, ",") + "]"})
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = h.newSession()
	}
	var mu sync.Mutex
	ran := map[string]int{}
	busy := 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 200) // bounded fan-out
	for i := range prompts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			id := ids[i%sessions]
			var r PromptResponse
			err := h.client.Call(context.Background(), "session/prompt", PromptRequest{SessionID: id, Prompt: []ContentBlock{TextBlock(fmt.Sprint("p", i))}}, &r)
			mu.Lock()
			defer mu.Unlock()
			var e *jsonrpc.Error
			switch {
			case err == nil && r.StopReason == "end_turn":
				ran[id]++
			case errors.As(err, &e) && e.Code == jsonrpc.InvalidParams:
				busy++
			default:
				t.Errorf("prompt %d: %+v %v", i, r, err)
			}
		}()
	}
	wg.Wait()
	total := busy
	for _, id := range ids {
		total += ran[id]
		rows, err := h.host.Store().Rows(t.Context(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		users, replies := 0, 0
		for i, r := range rows {
			switch r.Entry.(type) {
			case session.UserMessage:
				users++
				if i+1 >= len(rows) {
					t.Fatalf("session %s: a message without its reply", id)
				}
				if _, ok := rows[i+1].Entry.(session.AssistantMessage); !ok {
					t.Fatalf("session %s: row %d is followed by %T", id, i, rows[i+1].Entry)
				}
			case session.AssistantMessage:
				replies++
			}
		}
		if users != ran[id] || replies != ran[id] {
			t.Fatalf("session %s: %d prompts ran, log has %d messages and %d replies", id, ran[id], users, replies)
		}
	}
	if total != prompts {
		t.Fatalf("%d of %d prompts answered", total, prompts)
	}
	t.Logf("%d turns ran, %d refused as busy", prompts-busy, busy)
	var resp InitializeResponse
	h.call("initialize", InitializeRequest{ProtocolVersion: 1}, &resp)
}
