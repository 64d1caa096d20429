package subagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"meka.dev/meka/agent"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
)

type report struct {
	AgentID string `json:"agent_id"`
	Report  string `json:"report"`
}

func decodeReport(t *testing.T, tr session.ToolResult) report {
	t.Helper()
	var r report
	if err := json.Unmarshal([]byte(text(tr.Content)), &r); err != nil {
		t.Fatalf("result of %s is not {agent_id, report}: %v\n%s", tr.Name, err, text(tr.Content))
	}
	return r
}

func TestSpawnRunsChildAndReturnsReport(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"look around","description":"Survey"}}],"usage":{"input_tokens":10,"output_tokens":1}},
	 {"text":"The sub-agent says all is well.","usage":{"input_tokens":20,"output_tokens":2}}]`,
		map[string]string{"look around": `[
	 {"tool_calls":[{"id":"k1","name":"probe"}],"usage":{"input_tokens":100,"output_tokens":10}},
	 {"text":"All is well.","usage":{"input_tokens":200,"output_tokens":20}}]`})
	p := f.parent()
	res, err := p.Prompt(t.Context(), model.Text{Text: "delegate"})
	if err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("parent turn: %+v, %v", res, err)
	}
	// The child ran its tool, as a session of its own.
	c := <-f.probes
	kids := f.children(p.ID())
	if len(kids) != 1 || c.SessionID != kids[0].ID {
		t.Fatalf("children %+v; probe ran in %s", kids, c.SessionID)
	}
	kid := kids[0]
	if kid.ParentCallID != "s1" || kid.Title != "Survey" || kid.Cwd != p.Meta().Cwd {
		t.Errorf("child meta = %+v, want call s1, title Survey, the parent's cwd", kid)
	}
	trs := results(f.rows(p.ID()))
	if len(trs) != 1 || trs[0].Status != session.StatusOK {
		t.Fatalf("parent results = %+v", trs)
	}
	r := decodeReport(t, trs[0])
	if r.AgentID != kid.ID || r.Report != "All is well." {
		t.Errorf("report = %+v, want the child's id and last reply", r)
	}
	// The child's spend is in the parent turn's usage and on the record.
	want := model.Usage{InputTokens: 330, OutputTokens: 33}
	if res.Usage != want {
		t.Errorf("parent turn usage = %+v, want %+v", res.Usage, want)
	}
	if trs[0].Usage != (model.Usage{InputTokens: 300, OutputTokens: 30}) {
		t.Errorf("recorded sub-agent usage = %+v", trs[0].Usage)
	}
	var framed bool
	for _, row := range f.rows(kid.ID) {
		if sp, ok := row.Entry.(session.SystemPrompt); ok && strings.Contains(sp.Text, "You are a sub-agent") {
			framed = true
		}
	}
	if !framed {
		t.Errorf("the child's recorded system prompt lacks the sub-agent framing")
	}
	// Hidden from the lists; the parent's conversation has none of the
	// child's rows.
	page, err := f.db.Sessions().List(t.Context(), session.ListOptions{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != p.ID() {
		t.Errorf("top-level list = %+v, %v; want the parent alone", page.Sessions, err)
	}
	for _, row := range f.rows(p.ID()) {
		if tr, ok := row.Entry.(session.ToolResult); ok && tr.Name == "probe" {
			t.Errorf("the child's call is in the parent's log: %+v", tr)
		}
	}
	// Progress: the child's call as the spawn call's content.
	var lines [][]string
	for _, ev := range f.eventsOf(p.ID()) {
		if pr, ok := ev.(agent.ToolCallProgress); ok && pr.CallID == "s1" {
			lines = append(lines, pr.Lines)
		}
	}
	if len(lines) != 1 || !slices.Equal(lines[0], []string{"probe"}) {
		t.Errorf("progress of s1 = %q, want [[probe]]", lines)
	}
}

func TestParallelSpawnsOverlap(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"left"}},{"id":"s2","name":"agent_spawn","arguments":{"task":"right"}}]},
	 {"text":"both done"}]`,
		map[string]string{"left": `[{"text":"L"}]`, "right": `[{"text":"R"}]`})
	// Each sub-agent's first request waits until the other's has arrived:
	// run one after the other, the first would wait forever.
	var mu sync.Mutex
	arrived := map[string]bool{}
	both := make(chan struct{})
	f.model.before = func(ctx context.Context, task string, _ *model.Request) error {
		mu.Lock()
		arrived[task] = true
		if len(arrived) == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second): // a bound on failure, not a synchronisation
			return errors.New("the other sub-agent never ran alongside")
		}
	}
	p := f.parent()
	if res, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("parent turn: %+v, %v", res, err)
	}
	got := map[string]string{}
	for _, tr := range results(f.rows(p.ID())) {
		got[tr.CallID] = decodeReport(t, tr).Report
	}
	if got["s1"] != "L" || got["s2"] != "R" {
		t.Errorf("reports = %v, want s1 L and s2 R", got)
	}
}

func TestFollowupKeepsConversationAndChecklist(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"first"}}]},
	 {"text":"spawned"},
	 {"tool_calls":[{"id":"f1","name":"agent_followup","arguments":{"agent_id":"AGENT","task":"second"}}]},
	 {"text":"followed up"}]`,
		map[string]string{"first": `[
	 {"tool_calls":[{"id":"k1","name":"checklist_add","arguments":{"items":["Wait for review"]}}]},
	 {"tool_calls":[{"id":"k2","name":"checklist_edit","arguments":{"id":"c1","status":"deferred","reason":"waits on the parent's review"}}]},
	 {"text":"First part done; one item deferred."},
	 {"tool_calls":[{"id":"k3","name":"checklist_read"}]},
	 {"text":"Second part done."}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	// The parent names the agent it was given.
	f.model.parent = parse(t, strings.ReplaceAll(`[
	 {"tool_calls":[{"id":"f1","name":"agent_followup","arguments":{"agent_id":"AGENT","task":"second"}}]},
	 {"text":"followed up"}]`, "AGENT", kid.ID))
	if _, err := p.Prompt(t.Context(), model.Text{Text: "two"}); err != nil {
		t.Fatal(err)
	}
	trs := results(f.rows(p.ID()))
	r := decodeReport(t, trs[len(trs)-1])
	if r.AgentID != kid.ID || r.Report != "Second part done." {
		t.Fatalf("followup report = %+v", r)
	}
	reqs := f.model.children["first"].Requests()
	last := requestText(reqs[len(reqs)-1])
	if !strings.Contains(last, "First part done") || !strings.Contains(last, "second") {
		t.Errorf("the followup's request lacks the earlier turn:\n%s", last)
	}
	read := results(f.rows(kid.ID))
	if got := text(read[len(read)-1].Content); !strings.Contains(got, "Wait for review") {
		t.Errorf("checklist_read in the followup = %q, want the item kept", got)
	}
	if n := len(f.children(p.ID())); n != 1 {
		t.Errorf("a followup made %d children, want the one", n)
	}
}

func TestSteerReachesTheChildsNextRequest(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"work"}}]},
	 {"text":"spawned"}]`,
		map[string]string{"work": `[
	 {"text":"ready"},
	 {"tool_calls":[{"id":"k1","name":"probe"}]},
	 {"text":"steered"}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	// The followup's first request waits until the steer has returned,
	// so the message is queued before the child's next round.
	f.model.before = func(ctx context.Context, _ string, req *model.Request) error {
		if !strings.Contains(requestText(req), "again") || strings.Contains(requestText(req), "probed") {
			return nil
		}
		select {
		case <-f.steered:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.model.parent = parse(t, strings.ReplaceAll(`[
	 {"tool_calls":[{"id":"f1","name":"agent_followup","arguments":{"agent_id":"AGENT","task":"again"}},
	                {"id":"t1","name":"agent_steer","arguments":{"agent_id":"AGENT","text":"use tabs"}}]},
	 {"text":"done"}]`, "AGENT", kid.ID))
	if _, err := p.Prompt(t.Context(), model.Text{Text: "two"}); err != nil {
		t.Fatal(err)
	}
	trs := results(f.rows(p.ID()))
	var steer session.ToolResult
	for _, tr := range trs {
		if tr.CallID == "t1" {
			steer = tr
		}
	}
	if steer.Status != session.StatusOK {
		t.Fatalf("agent_steer = %+v", steer)
	}
	reqs := f.model.children["work"].Requests()
	last := requestText(reqs[len(reqs)-1])
	if !strings.Contains(last, "use tabs") {
		t.Errorf("the child's request after the steer lacks it:\n%s", last)
	}
}

func TestParallelCeiling(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"a"}},{"id":"s2","name":"agent_spawn","arguments":{"task":"b"}},{"id":"s3","name":"agent_spawn","arguments":{"task":"c"}}]},
	 {"text":"done"}]`,
		map[string]string{"a": `[{"text":"A"}]`, "b": `[{"text":"B"}]`, "c": `[{"text":"C"}]`})
	f.maxParallel = 1
	var mu sync.Mutex
	running, most := 0, 0
	f.model.before = func(context.Context, string, *model.Request) error {
		mu.Lock()
		defer mu.Unlock()
		running++
		most = max(most, running)
		return nil
	}
	f.model.after = func(string) {
		mu.Lock()
		running--
		mu.Unlock()
	}
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if most != 1 {
		t.Errorf("%d sub-agents ran at once under a ceiling of 1", most)
	}
	if n := len(results(f.rows(p.ID()))); n != 3 {
		t.Errorf("%d results, want 3", n)
	}
}

func TestLongReportGoesToTheScratchpad(t *testing.T) {
	long := strings.Repeat("line of the report\n", 5000)
	b, _ := json.Marshal(long)
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"talk"}}]},
	 {"text":"ok"}]`, map[string]string{"talk": `[{"text":` + string(b) + `}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	r := decodeReport(t, results(f.rows(p.ID()))[0])
	if len(r.Report) > 16<<10 || !strings.Contains(r.Report, "scratchpad file") {
		t.Fatalf("report of %d bytes: %.200q", len(r.Report), r.Report)
	}
	i := strings.Index(r.Report, "scratchpad file ")
	path := strings.TrimSuffix(strings.Fields(r.Report[i+len("scratchpad file "):])[0], ":")
	whole, err := os.ReadFile(path)
	if err != nil || string(whole) != long {
		t.Errorf("scratchpad file %s: %d bytes, %v; want the whole report", path, len(whole), err)
	}
}

// A followup refused at its checks (here, its schema) is never waited on:
// the steer of the same round finds the sub-agent idle and says so.
func TestSteerOfAnIdleChildIsRefused(t *testing.T) {
	f := newFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"work"}}]},
	 {"text":"spawned"}]`, map[string]string{"work": `[{"text":"ready"}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "one"}); err != nil {
		t.Fatal(err)
	}
	kid := f.children(p.ID())[0]
	f.model.parent = parse(t, strings.ReplaceAll(`[
	 {"tool_calls":[{"id":"f1","name":"agent_followup","arguments":{"agent_id":"AGENT","task":""}},
	                {"id":"t1","name":"agent_steer","arguments":{"agent_id":"AGENT","text":"use tabs"}}]},
	 {"text":"done"}]`, "AGENT", kid.ID))
	if _, err := p.Prompt(t.Context(), model.Text{Text: "two"}); err != nil {
		t.Fatal(err)
	}
	for _, tr := range results(f.rows(p.ID())) {
		switch tr.CallID {
		case "f1":
			if tr.Status != session.StatusRefused {
				t.Errorf("followup with an empty task = %s", tr.Status)
			}
		case "t1":
			if tr.Status != session.StatusError || !strings.Contains(text(tr.Content), "is idle") {
				t.Errorf("steer of an idle sub-agent = %s %q", tr.Status, text(tr.Content))
			}
		}
	}
}
