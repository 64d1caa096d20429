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
	"meka.dev/meka/model/script"
	"meka.dev/meka/permission"
	"meka.dev/meka/session"
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

// rowLog is an in-memory agent.Log.
type rowLog struct {
	mu   sync.Mutex
	rows []session.Row
}

func (l *rowLog) Append(_ context.Context, rows []session.Row) ([]session.Row, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range rows {
		rows[i].Seq = int64(len(l.rows) + 1)
		l.rows = append(l.rows, rows[i])
	}
	return rows, nil
}

// asker answers every request with d and records it.
type asker struct {
	d     permission.Decision
	asked []permission.Request
}

func (a *asker) Ask(_ context.Context, r permission.Request) (permission.Decision, error) {
	a.asked = append(a.asked, r)
	return a.d, nil
}

// A session at read may write a memory, which outlives it: the person is
// told with a notice recorded after the result, and with approvals on is
// asked first (a denial writes nothing). At workspace nothing is said.
func TestReadLevelWriteAnnouncedAndAsked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		level     permission.Level
		approvals bool
		answer    permission.Decision
		asked     bool
		written   bool
		notice    bool
	}{
		{"read", permission.Read, false, permission.Deny, false, true, true},
		{"read, approvals, allowed", permission.Read, true, permission.Allow, true, true, false},
		{"read, approvals, denied", permission.Read, true, permission.Deny, true, false, false},
		{"workspace", permission.Workspace, false, permission.Deny, false, true, false},
		{"workspace, approvals", permission.Workspace, true, permission.Deny, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store{}
			ext := memory.New(memory.Options{Store: st})
			reg := tool.NewRegistry()
			if err := reg.Add(ext.Tools...); err != nil {
				t.Fatal(err)
			}
			s, err := script.Parse([]byte(`{"rounds":[{"tool_calls":[{"id":"w1","name":"memory_write","arguments":{"text":"tests run with -race"}}]},{"text":"noted"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			a := &asker{d: tc.answer}
			log := &rowLog{}
			e, err := agent.New(agent.Options{Provider: script.New(s), Log: log, Tools: reg, SessionID: "s1",
				Gate: &tool.Gate{Level: func() permission.Level { return tc.level }, Approvals: func() bool { return tc.approvals }, Asker: a}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Run(t.Context(), session.UserMessage{Parts: model.Parts{model.Text{Text: "remember"}}}); err != nil {
				t.Fatal(err)
			}
			if got := len(a.asked) > 0; got != tc.asked {
				t.Errorf("asked %v, want %v", got, tc.asked)
			}
			notes, _ := st.List(t.Context(), "", 0)
			if got := len(notes) == 1; got != tc.written {
				t.Errorf("written %v, want %v", got, tc.written)
			}
			var notice *session.Notice
			resultAt := -1
			for i, r := range log.rows {
				switch e := r.Entry.(type) {
				case session.ToolResult:
					resultAt = i
				case session.Notice:
					if resultAt >= 0 && i > resultAt {
						notice = &e
					}
				}
			}
			if got := notice != nil; got != tc.notice {
				t.Fatalf("notice after the result %v, want %v (%+v)", got, tc.notice, notice)
			}
			if notice != nil && (!strings.Contains(notice.Title, "memory_write remembered memory m1") || !strings.Contains(notice.Title, "read level")) {
				t.Errorf("notice %q", notice.Title)
			}
		})
	}
}
