package host_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/mcp/mcptest"
	"meka.dev/meka/tool"
)

// A session offers the MCP servers' tools; a server's elicitation during a
// call goes to the front door attached to the session, a sub-agent's to
// its parent's, and with nobody attached it is declined with a notice.
func TestMCPToolsAndElicitation(t *testing.T) {
	// The server in process over HTTP: the transport is package mcp's to
	// test, and building the stdio binary would cost this test a go build.
	ts := httptest.NewServer(mcptest.Handler(mcptest.New(mcptest.Options{})))
	defer ts.Close()
	m := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "t", URL: ts.URL, EnabledTools: []string{"ask"}}}})
	m.Start(t.Context())
	defer m.Close()
	if err := m.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, `[]`)
	f.opts.MCP = m
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.MCPReport(), "- t: connected, 1 tool") {
		t.Errorf("report %q", h.MCPReport())
	}
	var got []host.Elicitation
	s.SetElicitor(host.ElicitorFunc(func(_ context.Context, e host.Elicitation) (host.ElicitResult, error) {
		got = append(got, e)
		return host.ElicitResult{Action: host.ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
	}))
	run := func(s *host.Session) string {
		t.Helper()
		tl, ok := s.Tools().Get("mcp__t__ask")
		if !ok {
			t.Fatalf("no MCP tool; have %v", s.Tools().Names())
		}
		res, err := tl.Run(t.Context(), tool.Call{Name: "mcp__t__ask", Arguments: json.RawMessage(`{"mode":"form"}`), SessionID: s.ID()})
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(res.Content)
		return string(js)
	}
	if out := run(s); !strings.Contains(out, `accept {\"name\":\"Ada\"}`) {
		t.Fatalf("attached: %s", out)
	}
	child, err := s.Spawn(t.Context(), host.ChildOptions{CallID: "c1", Title: "Asker"})
	if err != nil {
		t.Fatal(err)
	}
	if out := run(child); !strings.Contains(out, `accept {\"name\":\"Ada\"}`) || len(got) != 2 {
		t.Fatalf("sub-agent: %s (%d elicitations)", out, len(got))
	}
	s.SetElicitor(nil)
	var notices []string
	unsub := s.Subscribe(func(ev agent.Event) {
		if n, ok := ev.(agent.Notice); ok {
			notices = append(notices, n.Notice.Title)
		}
	})
	defer unsub()
	if out := run(s); !strings.Contains(out, "decline") {
		t.Fatalf("unattended: %s", out)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "Declined a request for input from MCP server t") {
		t.Fatalf("notices %q", notices)
	}
}
