package subagent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"meka.dev/meka/agent"
	"meka.dev/meka/internal/host"
	"meka.dev/meka/internal/sandbox"
	"meka.dev/meka/internal/subagent"
	"meka.dev/meka/internal/testenv"
	"meka.dev/meka/internal/tools/fstool"
	"meka.dev/meka/internal/worktree"
	"meka.dev/meka/model"
	"meka.dev/meka/session"
	"meka.dev/meka/tool"
)

// isolatedFixture is the fixture with the real file tools, confined to
// each session's roots, and worktrees under wts.
func isolatedFixture(t *testing.T, parentRounds string, children map[string]string) (*fixture, *worktree.Options) {
	f := newFixture(t, parentRounds, children)
	wts := &worktree.Options{Dir: filepath.Join(t.TempDir(), "worktrees")}
	f.opts.Worktrees = wts
	f.opts.Tools = func(env host.Env) ([]tool.Tool, error) {
		roots, err := sandbox.NewRoots(env.Meta.Cwd, env.Meta.AdditionalDirs, env.ReadableDirs)
		if err != nil {
			return nil, err
		}
		return fstool.New(fstool.Options{Roots: roots, FS: env.Files}), nil
	}
	return f, wts
}

type isolatedReport struct {
	AgentID  string `json:"agent_id"`
	Worktree struct {
		subagent.WorktreeReport
		Note string `json:"note"`
	} `json:"worktree"`
}

// agent_spawn with isolation "worktree" runs the sub-agent in a new
// worktree of the parent's repository, on a branch of its own, with the
// worktree as its only writable root. The parent is told the path, the
// branch and the diff stat; a worktree with changes is kept, one without
// removed with its branch, and made again for a followup.
func TestSpawnIsolatedInWorktree(t *testing.T) {
	repo := testenv.GitRepo(t, map[string]string{"a.txt": "one\n"})
	escape := filepath.Join(repo, "escape.txt")
	f, wts := isolatedFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"edit","isolation":"worktree"}},
	                {"id":"s2","name":"agent_spawn","arguments":{"task":"look","isolation":"worktree"}}]},
	 {"text":"both done"}]`,
		map[string]string{
			"edit": `[
	 {"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"a.txt","content":"two\nthree\n"}},
	                {"id":"w2","name":"file_write","arguments":{"path":"` + escape + `","content":"out\n"}}]},
	 {"text":"edited"}]`,
			"look": `[{"text":"nothing to change"}]`,
		})
	f.depth = 1
	p, err := f.host().Create(t.Context(), host.CreateOptions{Cwd: repo})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := p.Prompt(t.Context(), model.Text{Text: "delegate"}); err != nil || res.Stop != agent.StopEndTurn {
		t.Fatalf("parent turn: %+v, %v", res, err)
	}
	byCall := map[string]isolatedReport{}
	for _, tr := range results(f.rows(p.ID())) {
		var r isolatedReport
		if err := json.Unmarshal([]byte(text(tr.Content)), &r); err != nil || tr.Status != session.StatusOK {
			t.Fatalf("result of %s: %v %s", tr.CallID, err, text(tr.Content))
		}
		byCall[tr.CallID] = r
	}
	edit, look := byCall["s1"], byCall["s2"]

	// The editing sub-agent: kept, its change there and nowhere else.
	w := edit.Worktree
	if !w.Kept || !strings.HasPrefix(w.Branch, "meka/agent-") || !w.Uncommitted || w.Files != 1 ||
		!strings.Contains(w.DiffStat, "a.txt") || !strings.Contains(w.Note, "kept") {
		t.Fatalf("edit's worktree = %+v", w)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Path, "a.txt")); string(b) != "two\nthree\n" {
		t.Fatalf("a.txt in the worktree = %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one\n" {
		t.Fatalf("the parent's a.txt was changed: %q", b)
	}
	if _, err := os.Stat(escape); !os.IsNotExist(err) {
		t.Fatalf("the sub-agent wrote into the parent's workspace: %v", err)
	}
	for _, tr := range results(f.rows(edit.AgentID)) {
		if tr.CallID == "w2" && tr.Status == session.StatusOK {
			t.Fatalf("a write outside the worktree was allowed: %s", text(tr.Content))
		}
	}
	meta, err := f.db.Sessions().Get(t.Context(), edit.AgentID)
	if err != nil || meta.Cwd != w.Path || len(meta.AdditionalDirs) != 0 {
		t.Fatalf("the sub-agent's session: %+v %v, want cwd %s alone", meta, err, w.Path)
	}

	// The looking one: nothing changed, nothing left.
	if look.Worktree.Kept || look.Worktree.Path == "" || !strings.Contains(look.Worktree.Note, "removed") {
		t.Fatalf("look's worktree = %+v", look.Worktree)
	}
	if _, err := os.Stat(look.Worktree.Path); !os.IsNotExist(err) {
		t.Fatalf("an unchanged worktree was left: %v", err)
	}
	list, err := wts.List(t.Context(), repo)
	if err != nil || len(list) != 1 || list[0].Path != w.Path {
		t.Fatalf("worktrees = %+v, %v; want edit's alone", list, err)
	}
	if out := testenv.Sh(t, repo, "git branch --list 'meka/*'"); strings.Count(out, "meka/") != 1 {
		t.Fatalf("branches: %q", out)
	}

	// A followup of the one whose worktree was removed works there again.
	c, err := p.Spawner().Child(t.Context(), look.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(look.Worktree.Path); err != nil || !st.IsDir() {
		t.Fatalf("the worktree was not made again: %v", err)
	}
	r, ok, err := c.(subagent.Isolated).Settle(t.Context())
	if err != nil || !ok || r.Kept {
		t.Fatalf("settle after the followup: %+v %v %v", r, ok, err)
	}
}

// Isolation in a workspace that is no git repository is refused with a
// sentence that says why and what to do, and leaves no session behind.
func TestSpawnIsolatedOutsideRepository(t *testing.T) {
	testenv.NeedGit(t)
	f, _ := isolatedFixture(t, `[
	 {"tool_calls":[{"id":"s1","name":"agent_spawn","arguments":{"task":"edit","isolation":"worktree"}}]},
	 {"text":"refused"}]`, map[string]string{"edit": `[{"text":"never"}]`})
	p := f.parent()
	if _, err := p.Prompt(t.Context(), model.Text{Text: "delegate"}); err != nil {
		t.Fatal(err)
	}
	trs := results(f.rows(p.ID()))
	if len(trs) != 1 || trs[0].Status == session.StatusOK || !strings.Contains(text(trs[0].Content), "needs a git repository") ||
		!strings.Contains(text(trs[0].Content), "leave isolation out") {
		t.Fatalf("result = %+v", trs)
	}
	if kids := f.children(p.ID()); len(kids) != 0 {
		t.Fatalf("a sub-agent session was left: %+v", kids)
	}
}

// A scheduled job with isolation "worktree" fires its turn through
// RunInWorktree: a sub-agent session of the job's session, in a fresh
// worktree that is its only writable root, settled by the same rule.
func TestRunInWorktree(t *testing.T) {
	repo := testenv.GitRepo(t, map[string]string{"a.txt": "one\n"})
	f, _ := isolatedFixture(t, `[{"text":"unused"}]`, map[string]string{"nightly": `[
	 {"tool_calls":[{"id":"w1","name":"file_write","arguments":{"path":"b.txt","content":"new\n"}}]},
	 {"text":"wrote b"}]`})
	p, err := f.host().Create(t.Context(), host.CreateOptions{Cwd: repo})
	if err != nil {
		t.Fatal(err)
	}
	msg := session.UserMessage{Parts: model.Parts{model.Text{Text: "nightly"}}, Source: session.SourceSchedule}
	c, res, wt, err := p.RunInWorktree(t.Context(), msg, "scheduled job 1")
	if err != nil || res.Stop != agent.StopEndTurn || res.Reply != "wrote b" {
		t.Fatalf("turn: %+v %v", res, err)
	}
	m := c.Meta()
	if m.ParentID != p.ID() || m.Cwd != wt.Path || m.Title != "scheduled job 1" {
		t.Fatalf("the turn's session %+v, worktree %+v", m, wt)
	}
	if !wt.Kept || !strings.HasPrefix(wt.Branch, "meka/agent-") || !strings.Contains(wt.DiffStat, "b.txt") {
		t.Fatalf("worktree %+v", wt)
	}
	if b, _ := os.ReadFile(filepath.Join(wt.Path, "b.txt")); string(b) != "new\n" {
		t.Fatalf("b.txt in the worktree: %q", b)
	}
	if _, err := os.Stat(filepath.Join(repo, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("the turn wrote in the workspace: %v", err)
	}
	for _, r := range f.rows(p.ID()) {
		if _, ok := r.Entry.(session.UserMessage); ok {
			t.Fatalf("the job's session logged the sub-agent's turn: %+v", r)
		}
	}
}
