package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meka.dev/meka/internal/host"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// Delete removes a session nobody holds, its log and its directory; one
// open here or in another process is refused and kept whole.
func TestDeleteRefusesAHeldSession(t *testing.T) {
	f := newFixture(t, `[{"text":"hello"}]`)
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	dir := filepath.Join(f.opts.DataDir, "sessions", id)
	if err := h.Delete(t.Context(), id); !errors.Is(err, host.ErrSessionHeld) {
		t.Fatalf("delete of a session open here: %v", err)
	}
	if err := h.CloseSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	// Another process takes it: refused, naming it held.
	f.opts.Holder.Token = "two"
	other := f.host(t)
	if _, err := other.Open(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(t.Context(), id); !errors.Is(err, host.ErrSessionHeld) || !errors.Is(err, session.ErrHeld) {
		t.Fatalf("delete of a session another process holds: %v", err)
	}
	if rows, err := f.db.Sessions().Rows(t.Context(), id, 0); err != nil || len(rows) == 0 {
		t.Fatalf("a refused delete lost the log: %d rows, %v", len(rows), err)
	}
	if err := other.CloseSession(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(t.Context(), id); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := f.db.Sessions().Get(t.Context(), id); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the row is still there: %v", err)
	}
	if _, err := f.db.Sessions().Rows(t.Context(), id, 0); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the log is still there: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the session's directory is still there: %v", err)
	}
	if err := h.Delete(t.Context(), id); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

// A client's system prompt addition ends the system prompt, is recorded
// with it and kept when the session is opened again; a different one
// replaces it.
func TestClientSystemPromptIsRecorded(t *testing.T) {
	f := newFixture(t, `[{"text":"one"},{"text":"two"},{"text":"three"}]`)
	f.opts.Now = func() time.Time { return time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC) }
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir(), SystemPrompt: "Answer in French."})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	sys := f.prov.Requests()[0].System
	if !strings.HasSuffix(sys, "Answer in French.") || !strings.Contains(sys, "# Instructions from the client") {
		t.Fatalf("system prompt ends %q", sys[max(0, len(sys)-200):])
	}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	s, err = h.Open(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if got := f.prov.Requests()[1].System; got != sys || s.ClientPrompt() != "Answer in French." {
		t.Fatalf("reopened without the addition: %q", s.ClientPrompt())
	}
	other := "Answer in German."
	s, err = h.OpenIn(t.Context(), s.ID(), host.Workspace{SystemPrompt: &other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(t.Context(), model.Text{Text: "and now"}); err != nil {
		t.Fatal(err)
	}
	if got := f.prov.Requests()[2].System; !strings.HasSuffix(got, other) || strings.Contains(got, "French") {
		t.Fatalf("replaced addition: ends %q", got[max(0, len(got)-200):])
	}
}

// leveledTool is a file_read whose calls may need more than it declares.
type leveledTool struct {
	fakeTool
	needs permission.Level
}

func (l *leveledTool) CallLevel(tool.Call) permission.Level { return l.needs }

// file_read is wrapped to attach instructions; the wrapper still tells
// the gate what a call needs, so a read outside the roots is put to the
// user at workspace with approvals on, as a write is.
func TestWrappedFileReadAsksForWhatItsCallNeeds(t *testing.T) {
	f := newFixture(t, `[{"tool_calls":[{"id":"r","name":"file_read","arguments":{"path":"/elsewhere/x"}}]},{"text":"done"}]`)
	read := &leveledTool{needs: permission.Unrestricted, fakeTool: fakeTool{
		spec: tool.Spec{Name: "file_read", Description: "read", Schema: json.RawMessage(`{"type":"object"}`), Level: permission.Read, Kind: tool.KindRead},
		run:  func(context.Context, tool.Call) (tool.Result, error) { return tool.Text("read"), nil }}}
	f.opts.Tools = func(host.Env) ([]tool.Tool, error) { return []tool.Tool{read}, nil }
	f.opts.Permissions = host.Permissions{Default: permission.Workspace, Approvals: true}
	s, err := f.host(t).Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var asked []permission.Request
	s.SetAsker(permission.AskerFunc(func(_ context.Context, req permission.Request) (permission.Decision, error) {
		asked = append(asked, req)
		return permission.Allow, nil
	}))
	if _, err := s.Prompt(t.Context(), model.Text{Text: "read it"}); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0].Tool != "file_read" || asked[0].Needs != permission.Unrestricted {
		t.Fatalf("asked %+v", asked)
	}
	if tr := lastResult(t, s); tr.Status != session.StatusOK {
		t.Fatalf("result %+v", tr)
	}
}

// Deleting a session takes its sub-agents with it, at every depth: their
// rows and their directories.
func TestDeleteTakesTheSubAgents(t *testing.T) {
	f := newFixture(t, `[]`)
	h := f.host(t)
	s, err := h.Create(t.Context(), host.CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Spawn(t.Context(), host.ChildOptions{Title: "child"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := c.Spawn(t.Context(), host.ChildOptions{Title: "grandchild"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{s.ID(), c.ID(), g.ID()}
	if err := h.CloseSession(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(t.Context(), s.ID()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := f.db.Sessions().Get(t.Context(), id); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("session %s: %v", id, err)
		}
		if _, err := os.Stat(filepath.Join(f.opts.DataDir, "sessions", id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the directory of %s is still there: %v", id, err)
		}
	}
}
