package writetodos_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/writetodos"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// clock returns t0, then a minute later on every call.
type clock struct {
	mu sync.Mutex
	n  int
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return t0.Add(time.Duration(c.n-1) * time.Minute)
}

// sim runs write_todos the way the engine does: the call, then its
// assistant message and result folded in.
type sim struct {
	t      *testing.T
	p      *writetodos.Plugin
	folder *session.Folder
	n      int
}

func newSim(t *testing.T) *sim {
	c := &clock{}
	p := writetodos.New(writetodos.Options{Now: c.now})
	return &sim{t: t, p: p, folder: session.NewFolder(p.Fold())}
}

func (s *sim) call(args string) (string, bool) {
	s.t.Helper()
	s.n++
	id := fmt.Sprintf("c%d", s.n)
	res, err := s.p.Tools()[0].Run(s.t.Context(), tool.Call{ID: id, Name: writetodos.Name, Arguments: json.RawMessage(args)})
	if err != nil {
		s.t.Fatal(err)
	}
	status := session.StatusOK
	if res.IsError {
		status = session.StatusError
	}
	s.folder.Apply(
		session.Row{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: id, Name: writetodos.Name, Arguments: json.RawMessage(args)}}}},
		session.Row{Turn: 1, Entry: session.ToolResult{CallID: id, Name: writetodos.Name, Status: status, Content: res.Content, State: res.State}},
	)
	return text(res.Content), !res.IsError
}

func text(parts model.Parts) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(model.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

const (
	create = `{"todos":[
	  {"content":"Research the endpoint","status":"completed","activeForm":"Researching the endpoint"},
	  {"content":"Write the new tool module","status":"in_progress","activeForm":"Writing the tool module"},
	  {"content":"Add tests","status":"pending"}]}`
	rendered = "[x] 1. Research the endpoint (s1)\n[>] 2. Write the new tool module (s2)\n[ ] 3. Add tests (s3)"
)

func TestCreateRenders(t *testing.T) {
	s := newSim(t)
	out, ok := s.call(create)
	if !ok || out != rendered {
		t.Fatalf("ok %v:\n%s", ok, out)
	}
	if got := writetodos.Render(s.p.Todos()); got != rendered {
		t.Fatalf("Render:\n%s", got)
	}
}

// Each refusal is worded exactly, appends the list as it stands, and
// changes nothing.
func TestRefusals(t *testing.T) {
	list := "\nCurrent list:\n" + rendered
	for _, tc := range []struct {
		name, args, want string
	}{
		{"unknown id", `{"updates":[{"id":"s2","status":"completed"},{"id":"s5","status":"completed"}]}`,
			"unknown todo ID: s5. Available IDs: s1, s2, s3" + list},
		{"removal", `{"todos":[{"content":"Research the endpoint","status":"completed"},{"content":"Write the new tool module","status":"in_progress"}]}`,
			"cannot remove existing todos. Use status: cancelled instead." + list},
		{"reorder", `{"todos":[{"content":"Write the new tool module","status":"in_progress"},{"content":"Research the endpoint","status":"completed"},{"content":"Add tests","status":"pending"}]}`,
			"cannot replace or reorder existing todos; use updates with stable IDs" + list},
		{"different text", `{"todos":[{"content":"Research the API endpoint","status":"completed"},{"content":"Write the new tool module","status":"in_progress"},{"content":"Add tests","status":"pending"},{"content":"Ship","status":"pending"}]}`,
			"cannot replace or reorder existing todos; use updates with stable IDs" + list},
		{"status by resubmission", `{"todos":[{"content":"Research the endpoint","status":"completed"},{"content":"Write the new tool module","status":"completed"},{"content":"Add tests","status":"pending"}]}`,
			"cannot replace or reorder existing todos; use updates with stable IDs" + list},
		{"repeated id", `{"updates":[{"id":"s1","status":"in_progress"},{"id":"s1","status":"completed"}]}`,
			"updates[0] and updates[1] both change s1; give each ID once" + list},
		{"content rewrite", `{"updates":[{"id":"s2","status":"completed"},{"id":"s3","content":"Add a few tests"}]}`,
			"updates[1] (s3) rewrites the item's content; an item's content never changes. Mark s3 cancelled and add the new item with todos (the existing items unchanged, then the new one)" + list},
		{"completed back to pending", `{"updates":[{"id":"s1","status":"pending"}]}`,
			"updates[0] (s1) moves a completed item back to pending, which the list does not allow. If the work is to be done after all, add it as a new item with todos; to redo a completed item now, mark it in_progress" + list},
		{"nothing", `{}`, "write_todos needs todos (to create the list or append to it) or updates (to change items by ID)" + list},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			s.call(create)
			before := s.p.Todos()
			out, ok := s.call(tc.args)
			if ok || out != tc.want {
				t.Fatalf("ok %v:\n%s\nwant:\n%s", ok, out, tc.want)
			}
			if got := s.p.Todos(); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Fatalf("a refused call changed the list: %+v", got)
			}
		})
	}
	// With no list yet, there are no IDs to offer.
	s := newSim(t)
	if out, _ := s.call(`{"updates":[{"id":"s1","status":"completed"}]}`); out != "unknown todo ID: s1. Available IDs: (none)\nCurrent list:\n(the list is empty)" {
		t.Fatalf("%q", out)
	}
}

func TestAppendAndStableIDs(t *testing.T) {
	s := newSim(t)
	s.call(create)
	// Resubmitting the existing items unchanged, then new ones, appends.
	out, ok := s.call(`{"todos":[
	  {"content":"Research the endpoint","status":"completed","id":"s1"},
	  {"content":"Write the new tool module","status":"in_progress","activeForm":"Writing the tool module"},
	  {"content":"Add tests","status":"pending"},
	  {"content":"Document it","status":"pending"}]}`)
	if !ok || out != rendered+"\n[ ] 4. Document it (s4)" {
		t.Fatalf("ok %v:\n%s", ok, out)
	}
	// Content given unchanged is no rewrite.
	out, ok = s.call(`{"updates":[{"id":"s2","status":"completed"},{"id":"s4","content":"Document it","status":"in_progress","activeForm":"Documenting"},{"id":"s3","status":"cancelled"}]}`)
	want := "[x] 1. Research the endpoint (s1)\n[x] 2. Write the new tool module (s2)\n[-] 3. Add tests (s3)\n[>] 4. Document it (s4)"
	if !ok || out != want {
		t.Fatalf("ok %v:\n%s", ok, out)
	}
	var ids []string
	for _, td := range s.p.Todos() {
		ids = append(ids, td.ID)
	}
	if strings.Join(ids, ",") != "s1,s2,s3,s4" {
		t.Fatalf("ids %v", ids)
	}
}

// A cancelled item stays cancelled: neither pending nor a rewrite brings
// it back, and the refusal says how to add the work again.
func TestCancelledStaysCancelled(t *testing.T) {
	s := newSim(t)
	s.call(create)
	if _, ok := s.call(`{"updates":[{"id":"s3","status":"cancelled"}]}`); !ok {
		t.Fatal("cancel refused")
	}
	out, ok := s.call(`{"updates":[{"id":"s3","status":"pending"}]}`)
	if ok || !strings.HasPrefix(out, "updates[0] (s3) moves a cancelled item back to pending") || !strings.Contains(out, "add it as a new item with todos") {
		t.Fatalf("ok %v:\n%s", ok, out)
	}
	if got := s.p.Todos()[2].Status; got != plan.Cancelled {
		t.Fatalf("s3 is %s", got)
	}
}

func TestTimestamps(t *testing.T) {
	s := newSim(t)
	// The clock reads t0, then a minute later on each call.
	s.call(create)
	s.call(`{"updates":[{"id":"s2","status":"completed"}]}`)
	s.call(`{"todos":[{"content":"Research the endpoint","status":"completed"},{"content":"Write the new tool module","status":"completed"},{"content":"Add tests","status":"pending"},{"content":"Ship","status":"completed"}]}`)
	s.call(`{"updates":[{"id":"s1","status":"in_progress"}]}`)
	got := s.p.Todos()
	at := func(i int) time.Time { return got[i].At }
	done := func(i int) *time.Time { return got[i].CompletedAt }
	if !at(0).Equal(t0) || !at(2).Equal(t0) || !at(3).Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("at %v %v %v", at(0), at(2), at(3))
	}
	if done(0) != nil {
		t.Fatalf("reopened item keeps completedAt %v", done(0))
	}
	if done(1) == nil || !done(1).Equal(t0.Add(time.Minute)) || done(3) == nil || !done(3).Equal(t0.Add(2*time.Minute)) || done(2) != nil {
		t.Fatalf("completedAt %v %v %v", done(1), done(2), done(3))
	}
}

func TestChangedEvent(t *testing.T) {
	s := newSim(t)
	s.call(create)
	s.call(`{"updates":[{"id":"s3","status":"cancelled"}]}`)
	ev, ok := s.p.Fold().TakeEvent()
	if !ok {
		t.Fatal("no event")
	}
	c := ev.(plan.Changed)
	active, _ := c.Active()
	if c.Dialect != writetodos.Name || c.Completed != 1 || c.Total != 3 || active.ActiveForm != "Writing the tool module" || c.Items[0].ActiveForm != "Researching the endpoint" {
		t.Fatalf("%+v", c)
	}
	if p := plan.Panel(c.Items); p[2].Status != plan.PanelCompleted || p[2].Content != "Cancelled: Add tests" {
		t.Fatalf("panel %+v", p)
	}
	if _, ok := s.p.Fold().TakeEvent(); ok {
		t.Fatal("event taken twice")
	}
}

// The list every request carries stays within ContextCap, folding
// completed items first and always showing the item in progress.
func TestContextCapped(t *testing.T) {
	var items []writetodos.Todo
	for i := range writetodos.MaxItems {
		st := plan.Completed
		switch {
		case i == 90:
			st = plan.InProgress
		case i > 90:
			st = plan.Pending
		case i%10 == 0:
			st = plan.Cancelled
		}
		items = append(items, writetodos.Todo{ID: fmt.Sprintf("s%d", i+1), Content: fmt.Sprintf("item %d %s", i+1, strings.Repeat("ж", 150)), Status: st})
	}
	got := writetodos.Context(items)
	if len(got) > writetodos.ContextCap {
		t.Fatalf("%d bytes", len(got))
	}
	if !strings.HasPrefix(got, writetodos.ContextHeader) || !strings.HasSuffix(got, "\n"+writetodos.Instruction) {
		t.Fatalf("shape:\n%s", got)
	}
	if !strings.Contains(got, "\n[>] 91. item 91 ") || !strings.Contains(got, "\n[ ] 92. item 92 ") || strings.Contains(got, "\n[x] ") {
		t.Fatalf("priority:\n%s", got)
	}
	if !strings.Contains(got, "… (not shown: 81 completed, 9 cancelled, ") {
		t.Fatalf("count:\n%s", got)
	}
	if writetodos.Context(nil) != "" {
		t.Fatal("an empty list is carried")
	}
}

func TestContextNeverExceedsCap(t *testing.T) {
	statuses := []plan.Status{plan.Pending, plan.InProgress, plan.Completed, plan.Cancelled}
	seed := uint32(1)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	for range 500 {
		n := 1 + rnd(3*writetodos.MaxItems)
		items := make([]writetodos.Todo, n)
		for i := range items {
			items[i] = writetodos.Todo{ID: fmt.Sprintf("s%d", i+1), Content: strings.Repeat("word ", 1+rnd(300)), Status: statuses[rnd(4)]}
		}
		got := writetodos.Context(items)
		if len(got) > writetodos.ContextCap {
			t.Fatalf("%d items: %d bytes", n, len(got))
		}
		for i, it := range items {
			if it.Status == plan.InProgress {
				if !strings.Contains(got, fmt.Sprintf("\n[>] %d. ", i+1)) {
					t.Fatalf("first in-progress item %d missing", i+1)
				}
				break
			}
		}
	}
}

func BenchmarkContext128(b *testing.B) {
	items := make([]writetodos.Todo, writetodos.MaxItems)
	for i := range items {
		items[i] = writetodos.Todo{ID: fmt.Sprintf("s%d", i+1), Content: strings.Repeat("x", 120), Status: plan.Completed}
	}
	items[100].Status = plan.InProgress
	b.ReportAllocs()
	for b.Loop() {
		if len(writetodos.Context(items)) > writetodos.ContextCap {
			b.Fatal("over the cap")
		}
	}
}

// A refusal on a full list stays within about 2,000 characters, its IDs
// and the list included, whatever ID the model sent.
func TestRefusalBounded(t *testing.T) {
	s := newSim(t)
	var todos []string
	for i := range writetodos.MaxItems {
		todos = append(todos, fmt.Sprintf(`{"content":"item %d %s","status":"pending"}`, i+1, strings.Repeat("x", 150)))
	}
	if out, ok := s.call(`{"todos":[` + strings.Join(todos, ",") + `]}`); !ok {
		t.Fatal(out)
	}
	for _, id := range []string{"s999", strings.Repeat("q", 5000)} {
		out, ok := s.call(`{"updates":[{"id":"` + id + `","status":"completed"}]}`)
		if ok || len(out) > 2100 {
			t.Fatalf("ok %v, %d bytes:\n%s", ok, len(out), out)
		}
		if !strings.Contains(out, ". Available IDs: s1–s128\nCurrent list:\n[ ] 1. item 1 ") {
			t.Fatalf("shape:\n%s", out)
		}
	}
	// Short runs are listed, as the refusal has always named them.
	s = newSim(t)
	s.call(`{"todos":[{"content":"a","status":"pending"},{"content":"b","status":"pending"}]}`)
	if out, _ := s.call(`{"updates":[{"id":"s7","status":"completed"}]}`); !strings.HasPrefix(out, "unknown todo ID: s7. Available IDs: s1, s2\n") {
		t.Fatal(out)
	}
}

// A list holds at most MaxItems items: a call that would make it longer
// is refused whole, naming the first item past the cap, and the list
// stays as it was.
func TestListCappedAtMaxItems(t *testing.T) {
	todos := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"content":"item %d","status":"pending"}`, i+1)
		}
		return `{"todos":[` + strings.Join(items, ",") + `]}`
	}
	s := newSim(t)
	out, ok := s.call(todos(writetodos.MaxItems + 1))
	want := fmt.Sprintf("todos[%d] would be item %d; a list holds at most %d items", writetodos.MaxItems, writetodos.MaxItems+1, writetodos.MaxItems)
	if ok || !strings.HasPrefix(out, want) {
		t.Fatalf("a list of %d: ok %v:\n%.300s", writetodos.MaxItems+1, ok, out)
	}
	if n := len(s.p.Todos()); n != 0 {
		t.Fatalf("the refused call stored %d items", n)
	}
	if out, ok := s.call(todos(writetodos.MaxItems)); !ok {
		t.Fatalf("a list of %d refused: %.300s", writetodos.MaxItems, out)
	}
	// Appending to a full list is refused the same way.
	out, ok = s.call(todos(writetodos.MaxItems + 1))
	if ok || !strings.HasPrefix(out, want) {
		t.Fatalf("appending to a full list: ok %v:\n%.300s", ok, out)
	}
	if n := len(s.p.Todos()); n != writetodos.MaxItems {
		t.Fatalf("after the refused append the list has %d items, want %d", n, writetodos.MaxItems)
	}
}
