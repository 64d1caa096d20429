package host_test

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/mcp"
	"meka.dev/meka/internal/mcp/mcptest"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

// mcpProcess is what one meka process would hold: a manager of one
// server, "t", at url, and a host over the fixture's database.
func mcpProcess(t *testing.T, f *fixture, url string) *host.Host {
	t.Helper()
	m := mcp.New(mcp.Options{Servers: []mcp.Server{{Name: "t", URL: url, StartupTimeout: 20 * time.Second, ToolTimeout: 20 * time.Second}},
		MinBackoff: time.Hour}) // a server that is down stays down
	m.Start(t.Context())
	t.Cleanup(func() { _ = m.Close() })
	_ = m.Wait(t.Context()) // a server that is down fails
	f.opts.MCP = m
	return f.host(t)
}

func toolSpecs(req *model.Request) string {
	js, _ := json.Marshal(req.Tools)
	return string(js)
}

func toolNames(req *model.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

func toolSets(s *host.Session) []session.ToolSet {
	var out []session.ToolSet
	for _, r := range s.Engine().Rows() {
		if ts, ok := r.Entry.(session.ToolSet); ok {
			out = append(out, ts)
		}
	}
	return out
}

func messagesText(req *model.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if x, ok := p.(model.Text); ok {
				b.WriteString(x.Text + "\n")
			}
		}
	}
	return b.String()
}

// The MCP tool set a session's model was offered is in its log: resumed,
// the session's first request carries the recorded definitions byte for
// byte though the server changed meanwhile; the next records the change,
// tells the model and offers the new set. A fork at an earlier turn gets
// that turn's set, and a session opened while the server is down still
// offers its recorded tools, whose calls fail as not connected.
func TestMCPToolSetRecordedAndReplayed(t *testing.T) {
	srv := mcptest.New(mcptest.Options{})
	ts := httptest.NewServer(mcptest.Handler(srv))
	t.Cleanup(ts.Close)
	f := newFixture(t, `[
		{"text":"one"},
		{"tool_calls":[{"id":"c1","name":"mcp__t__echo","arguments":{"text":"hi"}}]},
		{"text":"two"},
		{"text":"fork one"},
		{"text":"fork two"},
		{"text":"the summary"},
		{"tool_calls":[{"id":"c2","name":"mcp__t__echo","arguments":{"text":"down"}}]},
		{"text":"down"},
		{"text":"fork three"}]`)
	cwd := t.TempDir()

	// Set A: the server's tools as it starts.
	h1 := mcpProcess(t, f, ts.URL)
	s, err := h1.Create(t.Context(), host.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if _, err := s.Prompt(t.Context(), model.Text{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	sets := toolSets(s)
	if len(sets) != 1 || len(sets[0].Tools) < 10 || sets[0].Removed != nil {
		t.Fatalf("first tool sets %+v", sets)
	}
	if err := h1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Set B: write is gone, added is new; a new process opens the session.
	srv.RemoveTools("write")
	mcptest.AddText(srv, "added", "Added later.", "added ran")
	h2 := mcpProcess(t, f, ts.URL)
	s, err = h2.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "second"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.prov.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	a := toolSpecs(reqs[0])
	if got := toolSpecs(reqs[1]); got != a {
		t.Fatalf("first request after resume:\n%s\nlast before:\n%s", got, a)
	}
	if r := lastResult(t, s); r.Status != session.StatusOK || !strings.Contains(resultText(r), "echo: hi") {
		t.Fatalf("echo result %+v", r)
	}
	names := toolNames(reqs[2])
	if !slices.Contains(names, "mcp__t__added") || slices.Contains(names, "mcp__t__write") {
		t.Fatalf("after reconciling, tools %v", names)
	}
	sets = toolSets(s)
	if len(sets) != 2 || len(sets[1].Tools) != 1 || sets[1].Tools[0].Name != "mcp__t__added" ||
		!slices.Equal(sets[1].Removed, []string{"mcp__t__write"}) {
		t.Fatalf("tool sets %+v", sets)
	}
	told := "The tools you can call changed: now offered: mcp__t__added; withdrawn: mcp__t__write."
	if !strings.Contains(messagesText(reqs[2]), told) || strings.Contains(messagesText(reqs[1]), told) {
		t.Fatalf("the model was not told once:\n%s", messagesText(reqs[2]))
	}
	var notices int
	for _, r := range s.Engine().Rows() {
		if n, ok := r.Entry.(session.Notice); ok && n.Title == "The tools changed" {
			notices++
		}
	}
	if notices != 1 {
		t.Fatalf("%d notices of the change", notices)
	}
	b := toolSpecs(reqs[2])

	// A fork at turn 1 offers set A, then reconciles to B.
	fk, err := h2.Fork(t.Context(), id, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"fork a", "fork b"} {
		if _, err := fk.Prompt(t.Context(), model.Text{Text: p}); err != nil {
			t.Fatal(err)
		}
	}
	reqs = f.prov.Requests()
	if toolSpecs(reqs[3]) != a || toolSpecs(reqs[4]) != b {
		t.Fatalf("fork offered\n%v\nthen\n%v", toolNames(reqs[3]), toolNames(reqs[4]))
	}
	// Compacted, the fork keeps its set in the boundary's checkpoint.
	if err := fk.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := h2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The server is down: the recorded set B is still offered, and a call
	// fails saying the server is not connected.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	h3 := mcpProcess(t, f, dead)
	s, err = h3.Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "third"}); err != nil {
		t.Fatal(err)
	}
	reqs = f.prov.Requests()
	if toolSpecs(reqs[6]) != b || toolSpecs(reqs[7]) != b {
		t.Fatalf("server down: offered\n%v\nthen\n%v", toolNames(reqs[6]), toolNames(reqs[7]))
	}
	if r := lastResult(t, s); r.Status != session.StatusError || !strings.Contains(resultText(r), "MCP server t is not connected") {
		t.Fatalf("call while down %+v", r)
	}
	if sets := toolSets(s); len(sets) != 2 {
		t.Fatalf("server down recorded a change: %+v", sets[2:])
	}
	fk, err = h3.Open(t.Context(), fk.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fk.Prompt(t.Context(), model.Text{Text: "fork c"}); err != nil {
		t.Fatal(err)
	}
	if reqs = f.prov.Requests(); toolSpecs(reqs[8]) != b {
		t.Fatalf("compacted fork offered %v", toolNames(reqs[8]))
	}
}

func resultText(r session.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Content {
		if x, ok := p.(model.Text); ok {
			b.WriteString(x.Text)
		}
	}
	return b.String()
}

// A session that recorded MCP tools, opened by a process with no server
// configured, is treated as one whose server left the config: its first
// request offers the recorded set, the next records that it is gone and
// tells the model, rather than the tools vanishing unsaid.
func TestMCPToolSetGoneWithoutServers(t *testing.T) {
	srv := mcptest.New(mcptest.Options{})
	ts := httptest.NewServer(mcptest.Handler(srv))
	t.Cleanup(ts.Close)
	f := newFixture(t, `[{"text":"one"},{"text":"two"},{"text":"three"}]`)
	h1 := mcpProcess(t, f, ts.URL)
	s, err := h1.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	recorded := toolSets(s)[0].Tools
	if err := h1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	f.opts.MCP = nil
	s, err = f.host(t).Open(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"second", "third"} {
		if _, err := s.Prompt(t.Context(), model.Text{Text: p}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.prov.Requests()
	if toolSpecs(reqs[1]) != toolSpecs(reqs[0]) {
		t.Fatalf("first request after opening offered %v", toolNames(reqs[1]))
	}
	for _, n := range toolNames(reqs[2]) {
		if strings.HasPrefix(n, "mcp__") {
			t.Fatalf("offered %s with no server configured", n)
		}
	}
	sets := toolSets(s)
	if len(sets) != 2 || len(sets[1].Tools) != 0 || len(sets[1].Removed) != len(recorded) {
		t.Fatalf("tool sets %+v", sets)
	}
	if !strings.Contains(messagesText(reqs[2]), "withdrawn: mcp__t__") {
		t.Fatalf("the model was not told:\n%s", messagesText(reqs[2]))
	}
}
