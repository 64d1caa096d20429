package subagent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/model"
	"meka.dev/meka/permission"
	"meka.dev/meka/plan"
	"meka.dev/meka/session"
)

func TestChildChecklistIsNudgedOnItsOwnTurn(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"work"}}]},
	 {"text":"done"}]`,
		map[string]string{"work": `[
	 {"tool_calls":[{"id":"k1","name":"checklist_add","arguments":{"items":["Write the test"]}}]},
	 {"text":"All done."},
	 {"tool_calls":[{"id":"k2","name":"checklist_edit","arguments":{"id":"c1","status":"completed"}}]},
	 {"text":"Now really done."}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	reqs := f.model.children["work"].Requests()
	if len(reqs) != 4 || !strings.Contains(requestText(reqs[2]), "Write the test") {
		t.Fatalf("the child was not sent back to its list: %d requests", len(reqs))
	}
	var nudged bool
	for _, r := range f.rows(kid.ID) {
		if n, ok := r.Entry.(session.Notice); ok && strings.Contains(n.Title, "Checklist") {
			nudged = true
		}
	}
	if !nudged {
		t.Errorf("the child's log has no nudge notice")
	}
	if r := decodeReport(t, results(f.rows(p.ID()))[0]); r.Report != "Now really done." {
		t.Errorf("report = %q", r.Report)
	}
	// None of it is the parent's: no plan change, no notice, no row.
	for _, ev := range f.eventsOf(p.ID()) {
		switch ev := ev.(type) {
		case plan.Changed:
			t.Errorf("the parent saw a plan change: %+v", ev)
		case agent.Notice:
			t.Errorf("the parent saw a notice: %+v", ev)
		}
	}
	for _, r := range f.rows(p.ID()) {
		if _, ok := r.Entry.(session.Notice); ok {
			t.Errorf("the parent's log has a notice: %+v", r.Entry)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	for _, depth := range []int{1, 2} {
		t.Run(fmt.Sprint(depth), func(t *testing.T) {
			f := newFixture(t, `[
			 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"work"}}]},
			 {"text":"done"}]`, map[string]string{"work": `[{"text":"ok"}]`})
			f.depth = depth
			p := f.parent()
			if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range f.model.children["work"].Requests()[0].Tools {
				names = append(names, s.Name)
			}
			has := slices.Contains(names, "agent_spawn")
			if has != (depth > 1) {
				t.Errorf("max depth %d: the child's tools are %v", depth, names)
			}
		})
	}
}

func TestCancelingTheParentCancelsTheChild(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"long"}}]}]`,
		map[string]string{"long": `[{"text":"never"}]`})
	waiting := make(chan struct{})
	gotCancel := make(chan error, 1)
	f.model.before = func(ctx context.Context, _ string, _ *model.Request) error {
		close(waiting)
		<-ctx.Done()
		gotCancel <- ctx.Err()
		return ctx.Err()
	}
	p := f.parent()
	go func() {
		<-waiting
		p.Cancel()
	}()
	res, _ := p.Prompt(t.Context(), model.Text{Text: "go"})
	if res.Stop != agent.StopCanceled {
		t.Errorf("parent stop = %s, want cancelled", res.Stop)
	}
	if err := <-gotCancel; !errors.Is(err, context.Canceled) {
		t.Errorf("the child's request ended with %v, want canceled", err)
	}
	trs := results(f.rows(p.ID()))
	if len(trs) != 1 || trs[0].Status != session.StatusCanceled {
		t.Errorf("spawn result = %+v, want canceled", trs)
	}
	kid := f.children(p.ID())[0]
	if kid.ID == "" {
		t.Fatal("no child")
	}
}

func TestFailingChildLetsTheParentGoOn(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"doomed"}}]},
	 {"text":"I will do it myself."}]`,
		map[string]string{"doomed": `[{"error":{"status":400,"body":"model not found"}}]`})
	p := f.parent()
	res, err := p.Prompt(t.Context(), model.Text{Text: "go"})
	if err != nil || res.Stop != agent.StopEndTurn || res.Reply != "I will do it myself." {
		t.Fatalf("parent turn = %+v, %v; want it to go on", res, err)
	}
	tr := results(f.rows(p.ID()))[0]
	if tr.Status != session.StatusError || !strings.Contains(text(tr.Content), "model not found") {
		t.Errorf("spawn result = %s %q, want an error with the reason", tr.Status, text(tr.Content))
	}
}

func TestChildLevelNeverExceedsTheParents(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"write","permission":"unrestricted"}}]},
	 {"text":"done"}]`,
		map[string]string{"write": `[
	 {"tool_calls":[{"id":"k1","name":"probe"}]},
	 {"tool_calls":[{"id":"k2","name":"probe"}]},
	 {"text":"tried"}]`})
	f.opts.Permissions.Default = permission.Workspace
	p := f.parent()
	// Once the first probe ran, the parent drops to read, before the
	// child's next request: the child's next call is refused.
	var once sync.Once
	f.model.before = func(ctx context.Context, _ string, req *model.Request) error {
		var err error
		if strings.Contains(requestText(req), "probed") {
			once.Do(func() { err = p.SetLevel(ctx, permission.Read) })
		}
		return err
	}
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	if kid.Permission != "workspace" {
		t.Errorf("child's level = %s, want the parent's workspace despite asking for unrestricted", kid.Permission)
	}
	trs := results(f.rows(kid.ID))
	if len(trs) != 2 || trs[0].Status != session.StatusOK || !strings.Contains(text(trs[0].Content), "workspace") ||
		trs[1].Status != session.StatusRefused {
		t.Errorf("child's results = %+v, want the first run at workspace and the second refused", trs)
	}
}

func TestChildApprovalsGoToTheParentsAsker(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"write","description":"Writer"}}]},
	 {"tool_calls":[{"id":"p1","name":"probe"}]},
	 {"text":"done"}]`,
		map[string]string{"write": `[
	 {"tool_calls":[{"id":"k1","name":"probe"}]},
	 {"text":"wrote"}]`})
	f.opts.Permissions = host.Permissions{Default: permission.Read, Approvals: true}
	p := f.parent()
	var asked []permission.Request
	p.SetAsker(permission.AskerFunc(func(_ context.Context, r permission.Request) (permission.Decision, error) {
		asked = append(asked, r)
		return permission.AlwaysAllow, nil
	}))
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	if len(asked) != 1 {
		t.Fatalf("asked %d times, want once (the child's always-allow covers the parent's call)", len(asked))
	}
	if r := asked[0]; r.SubAgent != "Writer" || r.SessionID != kid.ID || r.SpawnCallID != "s1" || r.Tool != "probe" {
		t.Errorf("request = %+v, want the child's probe named Writer, from call s1", r)
	}
	if st := results(f.rows(p.ID())); st[len(st)-1].Status != session.StatusOK {
		t.Errorf("the parent's own probe = %+v, want run on the sticky answer", st[len(st)-1])
	}
}

func TestProgressKeepsTheLastTwenty(t *testing.T) {
	var rounds []string
	for i := 1; i <= 25; i++ {
		rounds = append(rounds, fmt.Sprintf(`{"tool_calls":[{"id":"k%d","name":"probe","arguments":{"n":%d}}]}`, i, i))
	}
	rounds = append(rounds, `{"text":"done"}`)
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"many"}}]},
	 {"text":"ok"}]`, map[string]string{"many": "[" + strings.Join(rounds, ",") + "]"})
	go func() {
		for range f.probes {
		}
	}()
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	close(f.probes)
	var last []string
	n := 0
	for _, ev := range f.eventsOf(p.ID()) {
		if pr, ok := ev.(agent.ToolCallProgress); ok {
			last = pr.Lines
			n++
		}
	}
	if n != 25 || len(last) != 20 {
		t.Fatalf("%d progress updates, the last with %d lines; want 25 and 20", n, len(last))
	}
}

func TestChildSessionLifecycle(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"work"}}]},
	 {"text":"done"}]`, map[string]string{"work": `[{"text":"ok"}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	h := f.host()
	if _, err := h.Fork(t.Context(), kid.ID, -1); !errors.Is(err, host.ErrSubAgent) {
		t.Errorf("fork of a child: %v, want ErrSubAgent", err)
	}
	fork, err := h.Fork(t.Context(), p.ID(), -1)
	if err != nil {
		t.Fatal(err)
	}
	if kids := f.children(fork.ID()); len(kids) != 0 {
		t.Errorf("the fork has children %+v, want none copied", kids)
	}
	// Closed with its parent, the child cannot be opened but through it.
	if err := h.CloseSession(t.Context(), p.ID()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Get(kid.ID); ok {
		t.Errorf("the child stayed open after its parent closed")
	}
	if _, err := h.Open(t.Context(), kid.ID); !errors.Is(err, host.ErrSubAgent) {
		t.Errorf("open of a child on its own: %v, want ErrSubAgent", err)
	}
	// A rewind of the parent past the spawn leaves the child as a record.
	if err := f.db.Sessions().Rewind(t.Context(), p.ID(), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := f.db.Sessions().Get(t.Context(), kid.ID); err != nil || got.ParentID != p.ID() || len(f.rows(kid.ID)) == 0 {
		t.Errorf("after the rewind the child is %+v, %v", got, err)
	}
}

// A grandchild's calls stay on its parent's card: the top session sees
// only the agent_spawn line of the child that spawned it.
func TestNestedProgressIsNotForwarded(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"middle","description":"Middle"}}]},
	 {"text":"done"}]`, map[string]string{
		"middle": `[
	 {"tool_calls":[{"id":"m1","name":"agent_spawn","arguments":{"task":"leaf","description":"Leaf"}}]},
	 {"text":"middle done"}]`,
		"leaf": `[
	 {"tool_calls":[{"id":"l1","name":"probe"}]},
	 {"text":"leaf done"}]`})
	f.depth = 2
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	var top [][]string
	for _, ev := range f.eventsOf(p.ID()) {
		if pr, ok := ev.(agent.ToolCallProgress); ok {
			top = append(top, pr.Lines)
		}
	}
	if len(top) != 1 || !slices.Equal(top[0], []string{"agent_spawn Leaf"}) {
		t.Errorf("the top session's progress = %q, want only the middle's agent_spawn line", top)
	}
	middle := f.children(p.ID())[0]
	var mid [][]string
	for _, ev := range f.eventsOf(middle.ID) {
		if pr, ok := ev.(agent.ToolCallProgress); ok {
			mid = append(mid, pr.Lines)
		}
	}
	if len(mid) != 1 || !slices.Equal(mid[0], []string{"probe"}) {
		t.Errorf("the middle's progress = %q, want the leaf's probe", mid)
	}
	if leaf := f.children(middle.ID); len(leaf) != 1 || leaf[0].ParentCallID != "m1" {
		t.Errorf("the leaf = %+v", leaf)
	}
}

// A named definition: its tools allow-list, prompt and level cap apply;
// an unknown name or profile is refused without leaving a session.
func TestSpawnWithDefinition(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"review","agent":"reviewer"}},
	                {"id":"s2","name":"agent_spawn","arguments":{"task":"x","agent":"nobody"}},
	                {"id":"s3","name":"agent_spawn","arguments":{"task":"y","profile":"gone"}}]},
	 {"text":"done"}]`, map[string]string{"review": `[{"text":"looks fine"}]`})
	read := permission.Read
	f.defs = []subagent.Definition{{Name: "reviewer", Description: "Reviews", Tools: []string{"checklist_*"}, Permission: &read, Prompt: "Review carefully."}}
	prof := f.opts.Profiles
	f.opts.Profiles = func(name string) (host.Profile, error) {
		if name == "gone" {
			return host.Profile{}, errors.New("no profile gone")
		}
		return prof(name)
	}
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	kids := f.children(p.ID())
	if len(kids) != 1 || kids[0].Agent != "reviewer" || kids[0].Permission != "read" {
		t.Fatalf("children = %+v, want the reviewer alone, at read", kids)
	}
	req := f.model.children["review"].Requests()[0]
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	if slices.Contains(names, "probe") || !slices.Contains(names, "checklist_add") || !strings.Contains(req.System, "Review carefully.") {
		t.Errorf("the reviewer's tools %v / prompt miss its definition", names)
	}
	for _, tr := range results(f.rows(p.ID())) {
		if tr.CallID != "s1" && tr.Status != session.StatusError {
			t.Errorf("%s = %s %q, want an error", tr.CallID, tr.Status, text(tr.Content))
		}
	}
}
