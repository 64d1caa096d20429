package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/memory"
	"meka.dev/meka/model"
	"meka.dev/meka/tool"
)

// store is an in-memory memory.Store.
type store struct {
	mu    sync.Mutex
	next  int
	notes map[string][]memory.Note // by scope, oldest first
}

func (s *store) List(_ context.Context, scope string, limit int) ([]memory.Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memory.Note
	ns := s.notes[scope]
	for i := len(ns) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		out = append(out, ns[i])
	}
	return out, nil
}

func (s *store) find(scope, id string) int {
	for i, n := range s.notes[scope] {
		if n.ID == id {
			return i
		}
	}
	return -1
}

func (s *store) Get(_ context.Context, scope, id string) (memory.Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(scope, id); i >= 0 {
		return s.notes[scope][i], nil
	}
	return memory.Note{}, memory.ErrNotFound
}

func (s *store) Put(_ context.Context, scope, id, text string) (memory.Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notes == nil {
		s.notes = map[string][]memory.Note{}
	}
	if id != "" {
		i := s.find(scope, id)
		if i < 0 {
			return memory.Note{}, memory.ErrNotFound
		}
		ns := append(append([]memory.Note(nil), s.notes[scope][:i]...), s.notes[scope][i+1:]...)
		n := memory.Note{ID: id, Text: text}
		s.notes[scope] = append(ns, n)
		return n, nil
	}
	s.next++
	n := memory.Note{ID: fmt.Sprintf("m%d", s.next), Text: text, Updated: time.Unix(int64(s.next), 0)}
	s.notes[scope] = append(s.notes[scope], n)
	return n, nil
}

func (s *store) Delete(_ context.Context, scope, id string) (memory.Note, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(scope, id)
	if i < 0 {
		return memory.Note{}, memory.ErrNotFound
	}
	n := s.notes[scope][i]
	s.notes[scope] = append(s.notes[scope][:i], s.notes[scope][i+1:]...)
	return n, nil
}

func call(t *testing.T, x agent.Extension, name, args string) tool.Result {
	t.Helper()
	for _, tl := range x.Tools {
		if tl.Spec().Name == name {
			r, err := tl.Run(t.Context(), tool.Call{Name: name, Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}
}

func restated(t *testing.T, x agent.Extension) string {
	t.Helper()
	var b strings.Builder
	for _, p := range x.Contributors[0].Contribute(t.Context(), agent.RequestInfo{}) {
		b.WriteString(p.(model.Text).Text)
	}
	return b.String()
}

func TestWriteReplaceDeleteScoped(t *testing.T) {
	st := &store{}
	scope := ""
	x := memory.New(memory.Options{Store: st, Scope: func() string { return scope }})
	if got := restated(t, x); got != "" {
		t.Fatalf("nothing to restate, got %q", got)
	}
	r := call(t, x, "memory_write", `{"text":"likes tabs"}`)
	if r.IsError || r.Change != "--- memory m1\n+++ memory m1\n@@ -0,0 +1 @@\n+likes tabs\n" {
		t.Fatalf("write %+v", r)
	}
	r = call(t, x, "memory_write", `{"id":"m1","text":"likes tabs\nand short answers"}`)
	if r.IsError || r.Change != "--- memory m1\n+++ memory m1\n@@ -1 +1,2 @@\n-likes tabs\n+likes tabs\n+and short answers\n" {
		t.Fatalf("replace %+v", r)
	}
	call(t, x, "memory_write", `{"text":"second"}`)
	if got := restated(t, x); !strings.HasPrefix(got, "[Memories: your own (no project)") ||
		strings.Index(got, "- m2: second") > strings.Index(got, "- m1: likes tabs and short answers") {
		t.Fatalf("restated %q", got)
	}
	// Another scope sees none of them, and cannot touch them.
	scope = "web"
	if got := restated(t, x); got != "" {
		t.Fatalf("project scope restates the user's: %q", got)
	}
	if r := call(t, x, "memory_delete", `{"id":"m1"}`); !r.IsError || !strings.Contains(r.Content[0].(model.Text).Text, "no memory m1 in project web") {
		t.Fatalf("delete across scopes %+v", r)
	}
	if r := call(t, x, "memory_write", `{"id":"m1","text":"x"}`); !r.IsError {
		t.Fatalf("replace across scopes %+v", r)
	}
	scope = ""
	r = call(t, x, "memory_delete", `{"id":"m2"}`)
	if r.IsError || r.Change != "--- memory m2\n+++ memory m2\n@@ -1 +0,0 @@\n-second\n" {
		t.Fatalf("delete %+v", r)
	}
	if r := call(t, x, "memory_write", `{"text":"`+strings.Repeat("x", memory.MaxText+1)+`"}`); !r.IsError {
		t.Fatal("an overlong memory was kept")
	}
}

func TestRestatedBounded(t *testing.T) {
	var notes []memory.Note
	for i := range 80 {
		notes = append(notes, memory.Note{ID: fmt.Sprintf("m%d", 80-i), Text: strings.Repeat("word ", 10)})
	}
	got := memory.Render(notes)
	if len(got) > memory.MaxRestatedBytes+100 || !strings.Contains(got, "older memories not shown") || strings.Count(got, "\n- ")+1 > memory.MaxRestated {
		t.Fatalf("%d bytes:\n%s", len(got), got)
	}
}
