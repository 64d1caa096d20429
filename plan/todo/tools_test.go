package todo_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"meka.dev/meka/model"
	"meka.dev/meka/plan"
	"meka.dev/meka/plan/todo"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// sim runs the plan tools the way the engine does: the call, then its
// assistant message and result folded in.
type sim struct {
	t      *testing.T
	store  *todo.Store
	tools  map[string]tool.Tool
	folder *session.Folder
	n      int
}

func newSim(t *testing.T, store *todo.Store) *sim {
	t.Helper()
	p := todo.Plugin{Store: store}
	tools, err := p.Tools()
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Fold()
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{t: t, store: store, tools: map[string]tool.Tool{}, folder: session.NewFolder(f)}
	for _, tl := range tools {
		s.tools[tl.Spec().Name] = tl
	}
	return s
}

func (s *sim) call(name string, args any) (string, bool) {
	s.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		s.t.Fatal(err)
	}
	s.n++
	id := fmt.Sprintf("c%d", s.n)
	res, err := s.tools[name].Run(s.t.Context(), tool.Call{ID: id, Name: name, Arguments: raw})
	if err != nil {
		s.t.Fatal(err)
	}
	status := session.StatusOK
	if res.IsError {
		status = session.StatusError
	}
	s.folder.Apply(
		session.Row{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{model.ToolCall{ID: id, Name: name, Arguments: raw}}}},
		session.Row{Turn: 1, Entry: session.ToolResult{CallID: id, Name: name, Status: status, Content: res.Content, State: res.State}},
	)
	return text(res.Content), !res.IsError
}

type step = map[string]string

func planOf(n int, st string) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{"step": fmt.Sprintf("step %d", i+1), "status": st}
	}
	return out
}

func TestNoStoreRefused(t *testing.T) {
	p := todo.Plugin{CheckCompletion: true}
	if _, err := p.Compose(); !errors.Is(err, todo.ErrNoStore) {
		t.Fatalf("Compose: %v", err)
	}
	if _, err := p.Tools(); !errors.Is(err, todo.ErrNoStore) {
		t.Fatalf("Tools: %v", err)
	}
	if _, err := p.Contributor(); !errors.Is(err, todo.ErrNoStore) {
		t.Fatalf("Contributor: %v", err)
	}
	if _, err := p.Interceptor(); !errors.Is(err, todo.ErrNoStore) {
		t.Fatalf("Interceptor: %v", err)
	}
	if _, err := p.Fold(); !errors.Is(err, todo.ErrNoStore) {
		t.Fatalf("Fold: %v", err)
	}
}

func TestToolsAreBookkeeping(t *testing.T) {
	tools, _ := todo.Plugin{Store: todo.NewStore()}.Tools()
	if len(tools) != 2 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, tl := range tools {
		if !tl.Spec().Bookkeeping || tl.Spec().ParallelSafe {
			t.Errorf("%s: %+v", tl.Spec().Name, tl.Spec())
		}
	}
}

func TestUpdatePlanReply(t *testing.T) {
	s := newSim(t, todo.NewStore())
	out, ok := s.call(todo.UpdateName, map[string]any{"explanation": "start", "plan": []step{
		{"step": "read the schema", "status": "completed"},
		{"step": "  write\nthe query ", "status": "in_progress", "id": "q"},
		{"step": "verify", "status": "pending", "phase": "check"},
	}})
	want := "Plan updated.\n[x] read the schema\n[~] write the query (id: q)\n[ ] verify (phase: check)"
	if !ok || out != want {
		t.Fatalf("reply %q, want %q", out, want)
	}
	if got := texts(s.store.Items()); got != "read the schema:completed,write the query:in_progress,verify:pending" {
		t.Fatalf("stored %s", got)
	}
}

func TestItemBound(t *testing.T) {
	s := newSim(t, todo.NewStore())
	if out, ok := s.call(todo.UpdateName, map[string]any{"plan": planOf(todo.MaxItems, "pending")}); !ok {
		t.Fatalf("128 steps refused: %s", out)
	}
	out, ok := s.call(todo.UpdateName, map[string]any{"plan": planOf(todo.MaxItems+1, "pending")})
	if ok || !strings.Contains(out, "129 steps") || !strings.Contains(out, "steps 129 to 129") || !strings.Contains(out, "The current plan:\n[ ] step 1\n") {
		t.Fatalf("129 steps: ok %v %q", ok, out)
	}
	if n := len(s.store.Items()); n != todo.MaxItems {
		t.Fatalf("store has %d steps after a refusal", n)
	}
	// patch_plan cannot grow the plan past the bound either.
	out, ok = s.call(todo.PatchName, map[string]any{"operations": []map[string]any{{"action": "add", "id": "x", "item": step{"step": "one more", "status": "pending"}}}})
	if ok || !strings.Contains(out, "129 steps") {
		t.Fatalf("patch past the bound: ok %v %q", ok, out[:200])
	}
}

func TestByteBounds(t *testing.T) {
	s := newSim(t, todo.NewStore())
	long := strings.Repeat("ü", 100) // 200 bytes
	if out, ok := s.call(todo.UpdateName, map[string]any{"plan": []step{{"step": long, "status": "pending", "id": strings.Repeat("i", 64), "phase": strings.Repeat("p", 160)}}}); !ok {
		t.Fatalf("refused: %s", out)
	}
	got := s.store.Items()[0].Text
	if len(got) != todo.MaxStepBytes || !utf8.ValidString(got) || got != strings.Repeat("ü", 80) {
		t.Fatalf("stored text %d bytes %q", len(got), got)
	}
	for _, tc := range []struct {
		st   step
		want string
	}{
		{step{"step": "a", "status": "pending", "id": strings.Repeat("i", 65)}, "step 2 has an id of 65 bytes"},
		{step{"step": "a", "status": "pending", "id": "ph", "phase": strings.Repeat("p", 161)}, `step 2 (id "ph") has a phase of 161 bytes`},
		{step{"step": "  ", "status": "pending"}, "step 2 has no text"},
	} {
		out, ok := s.call(todo.UpdateName, map[string]any{"plan": []step{{"step": "first", "status": "completed"}, tc.st}})
		if ok || !strings.Contains(out, tc.want) || !strings.Contains(out, "The current plan:\n[ ] üü") {
			t.Errorf("%v: ok %v %q", tc.st, ok, out)
		}
	}
}

func TestTwoInProgressRefused(t *testing.T) {
	s := newSim(t, todo.NewStore())
	s.call(todo.UpdateName, map[string]any{"plan": []step{{"step": "existing", "status": "in_progress", "id": "e"}}})
	out, ok := s.call(todo.UpdateName, map[string]any{"plan": []step{
		{"step": "a", "status": "completed"},
		{"step": "write the query", "status": "in_progress"},
		{"step": "c", "status": "pending"},
		{"step": "d", "status": "in_progress", "id": "d"},
	}})
	if ok || !strings.Contains(out, `step 2 ("write the query") and step 4 (id "d") are both in_progress`) ||
		!strings.HasSuffix(out, "The current plan:\n[~] existing (id: e)") {
		t.Fatalf("ok %v %q", ok, out)
	}
	// patch_plan names the step left in progress too.
	out, ok = s.call(todo.PatchName, map[string]any{"operations": []map[string]any{{"action": "add", "id": "n", "item": step{"step": "new", "status": "in_progress"}}}})
	if ok || !strings.Contains(out, `step 1 (id "e") and step 2 (id "n") are both in_progress`) {
		t.Fatalf("patch: ok %v %q", ok, out)
	}
	if got := texts(s.store.Items()); got != "existing:in_progress" {
		t.Fatalf("stored %s", got)
	}
}

func TestPatchAtomic(t *testing.T) {
	s := newSim(t, todo.NewStore())
	s.call(todo.UpdateName, map[string]any{"plan": []step{
		{"id": "a", "step": "a", "status": "completed"},
		{"id": "b", "step": "b", "status": "in_progress"},
		{"id": "c", "step": "c", "status": "pending"},
	}})
	before := texts(s.store.Items())
	good := []map[string]any{
		{"action": "replace", "id": "b", "item": step{"step": "b", "status": "completed"}},
		{"action": "replace", "id": "c", "item": step{"step": "c", "status": "in_progress"}},
		{"action": "add", "id": "d", "item": step{"step": "d", "status": "pending"}},
		{"action": "remove", "id": "a"},
	}
	for _, tc := range []struct {
		name string
		bad  map[string]any
		want string
	}{
		{"unknown id", map[string]any{"action": "remove", "id": "zz"}, `operation 5 (remove "zz"): no step has that id (ids in the plan: "b", "c", "d")`},
		{"second in progress", map[string]any{"action": "add", "id": "e", "item": step{"step": "e", "status": "in_progress"}}, `step 2 (id "c") and step 4 (id "e") are both in_progress`},
		{"duplicate add", map[string]any{"action": "add", "id": "c", "item": step{"step": "c2", "status": "pending"}}, `operation 5 (add "c"): step 2 already has that id`},
		{"missing item", map[string]any{"action": "replace", "id": "d"}, `operation 5 (replace "d") has no item`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := s.call(todo.PatchName, map[string]any{"operations": append(append([]map[string]any(nil), good...), tc.bad)})
			if ok || !strings.Contains(out, tc.want) || !strings.Contains(out, "Nothing was changed.\nThe current plan:\n[x] a (id: a)\n[~] b (id: b)\n[ ] c (id: c)") {
				t.Fatalf("ok %v %q", ok, out)
			}
			if got := texts(s.store.Items()); got != before {
				t.Fatalf("plan changed by a refused patch: %s", got)
			}
		})
	}
	out, ok := s.call(todo.PatchName, map[string]any{"operations": good})
	if !ok || out != "Plan updated.\n[x] b (id: b)\n[~] c (id: c)\n[ ] d (id: d)" {
		t.Fatalf("ok %v %q", ok, out)
	}
}

func TestFoldedIDsAreNotTargets(t *testing.T) {
	s := newSim(t, todo.NewStore())
	var p []step
	for i := 1; i <= 8; i++ {
		p = append(p, step{"id": fmt.Sprintf("s%d", i), "step": fmt.Sprintf("step %d", i), "status": "completed"})
	}
	p = append(p, step{"id": "next", "step": "next", "status": "pending"})
	out, _ := s.call(todo.UpdateName, map[string]any{"plan": p})
	if !strings.HasPrefix(out, "Plan updated.\n[x] (3 earlier steps completed)\n[x] step 4 (id: s4)") || s.store.Retired() != 3 {
		t.Fatalf("reply %q retired %d", out, s.store.Retired())
	}
	out, ok := s.call(todo.PatchName, map[string]any{"operations": []map[string]any{{"action": "replace", "id": "s1", "item": step{"step": "again", "status": "pending"}}}})
	if ok || !strings.Contains(out, `operation 1 (replace "s1"): no step has that id`) || !strings.Contains(out, "folded into the count") {
		t.Fatalf("ok %v %q", ok, out)
	}
	// Completing another step folds one more: the count only grows.
	s.call(todo.PatchName, map[string]any{"operations": []map[string]any{{"action": "replace", "id": "next", "item": step{"step": "next", "status": "completed"}}}})
	if s.store.Retired() != 4 || len(s.store.Items()) != 5 {
		t.Fatalf("retired %d items %d", s.store.Retired(), len(s.store.Items()))
	}
}

// Two calls in one round: the second computes from the first's outcome
// even though neither is folded in yet.
func TestSecondCallOfARoundSeesTheFirst(t *testing.T) {
	store := todo.NewStore()
	tools, _ := todo.Plugin{Store: store}.Tools()
	f, _ := todo.Plugin{Store: store}.Fold()
	folder := session.NewFolder(f)
	a1 := json.RawMessage(`{"plan":[{"id":"a","step":"a","status":"in_progress"}]}`)
	a2 := json.RawMessage(`{"operations":[{"action":"replace","id":"a","item":{"step":"a","status":"completed"}}]}`)
	r1, _ := tools[0].Run(t.Context(), tool.Call{ID: "1", Name: todo.UpdateName, Arguments: a1})
	r2, _ := tools[1].Run(t.Context(), tool.Call{ID: "2", Name: todo.PatchName, Arguments: a2})
	if r1.IsError || r2.IsError {
		t.Fatalf("%q %q", text(r1.Content), text(r2.Content))
	}
	if len(store.Items()) != 0 {
		t.Fatal("a tool changed the store before its result was folded")
	}
	folder.Apply(
		session.Row{Turn: 1, Entry: session.AssistantMessage{Parts: model.Parts{
			model.ToolCall{ID: "1", Name: todo.UpdateName, Arguments: a1}, model.ToolCall{ID: "2", Name: todo.PatchName, Arguments: a2}}}},
		session.Row{Turn: 1, Entry: session.ToolResult{CallID: "1", Name: todo.UpdateName, Status: session.StatusOK, State: r1.State}},
		session.Row{Turn: 1, Entry: session.ToolResult{CallID: "2", Name: todo.PatchName, Status: session.StatusOK, State: r2.State}},
	)
	if got := texts(store.Items()); got != "a:completed" {
		t.Fatalf("stored %s", got)
	}
}

func TestPanelShowsDialectStatuses(t *testing.T) {
	got := plan.Panel([]plan.Item{{Text: "x", Status: plan.Blocked}, {Text: "y", Status: plan.Abandoned}})
	if got[0].Content != "Blocked: x" || got[1].Status != plan.PanelCompleted || got[1].Content != "Abandoned: y" {
		t.Fatalf("%+v", got)
	}
}
